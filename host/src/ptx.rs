//! The PTX built by `build.rs`, embedded in the library.

use hgemm_kernels::spec::Family;

const SM_90A: &str = include_str!(concat!(env!("OUT_DIR"), "/sm_90a.ptx"));
const SM_100F: &str = include_str!(concat!(env!("OUT_DIR"), "/sm_100f.ptx"));

/// The PTX module holding `family`'s kernels (and the fill kernels every module has).
pub fn module(family: Family) -> &'static str {
    match family {
        Family::Hopper => SM_90A,
        Family::Blackwell => SM_100F,
    }
}

/// Every embedded module: (PTX target name, text).
pub fn all() -> [(Family, &'static str); 2] {
    [(Family::Hopper, SM_90A), (Family::Blackwell, SM_100F)]
}

/// The `ptxas -arch` values a family's PTX must assemble for: sm_100f PTX serves both B200
/// (sm_100a) and GB300 (sm_103a).
pub fn ptxas_archs(family: Family) -> &'static [&'static str] {
    match family {
        Family::Hopper => &["sm_90a"],
        Family::Blackwell => &["sm_100a", "sm_103a"],
    }
}
