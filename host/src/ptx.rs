//! The kernels' PTX, embedded in the library. The files are committed (`host/ptx/`), built from
//! the kernels crate by `scripts/build-ptx.sh` with the pinned nightly; a test
//! (`tools/ptxgen/tests/fresh.rs`) fails when they differ from a fresh build. The `hang-guard`
//! feature embeds the modules built with `--cfg hang_guard` instead.

use hgemm_kernels::spec::Family;

#[cfg(not(feature = "hang-guard"))]
const SM_90A: &str = include_str!("../ptx/sm_90a.ptx");
#[cfg(not(feature = "hang-guard"))]
const SM_100F: &str = include_str!("../ptx/sm_100f.ptx");
#[cfg(feature = "hang-guard")]
const SM_90A: &str = include_str!("../ptx/hang-guard/sm_90a.ptx");
#[cfg(feature = "hang-guard")]
const SM_100F: &str = include_str!("../ptx/hang-guard/sm_100f.ptx");

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
