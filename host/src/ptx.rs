//! The kernels' PTX, embedded in the library. The files are committed (`host/ptx/`), built from
//! the kernels crate by `scripts/build-ptx.sh` with the pinned nightly; a test
//! (`tools/ptxgen/tests/fresh.rs`) fails when they differ from a fresh build. The `hang-guard`
//! feature embeds the modules built with `--cfg hang_guard` instead. Beside the PTX, cubins
//! assembled from it ([`cubin`]), which the devices they target load instead.

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

/// The `ptxas -arch` values a family's PTX must assemble for, and the cubins embedded for it:
/// sm_100f PTX serves both B200 (sm_100a) and GB300 (sm_103a).
pub fn ptxas_archs(family: Family) -> &'static [&'static str] {
    family.sass_archs()
}

/// The embedded cubins: every `ptxas_archs` target, assembled from the PTX above by ptxas, so that
/// a device they were built for loads its kernels without the driver's JIT (which takes half a
/// minute for the Hopper module when its cache is empty). The `hang-guard` build has none: it
/// loads the PTX.
#[cfg(not(feature = "hang-guard"))]
const CUBINS: &[(&str, &[u8])] = &[
    ("sm_90a", include_bytes!("../ptx/sm_90a.cubin")),
    ("sm_100a", include_bytes!("../ptx/sm_100a.cubin")),
    ("sm_103a", include_bytes!("../ptx/sm_103a.cubin")),
];
#[cfg(feature = "hang-guard")]
const CUBINS: &[(&str, &[u8])] = &[];

/// Every embedded cubin: (SASS target, bytes).
pub fn cubins() -> &'static [(&'static str, &'static [u8])] {
    CUBINS
}

/// The cubin for a device of compute capability `major.minor` (`sm_<major><minor>a`), if one is
/// embedded: its SASS target and its bytes. Other devices of a family load its PTX.
pub fn cubin(major: u32, minor: u32) -> Option<(&'static str, &'static [u8])> {
    let arch = format!("sm_{major}{minor}a");
    CUBINS.iter().find(|(a, _)| *a == arch).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cubin_is_picked_by_exact_compute_capability() {
        let picked = |major, minor| cubin(major, minor).map(|c| c.0);
        if cfg!(feature = "hang-guard") {
            assert_eq!(picked(9, 0), None);
            return;
        }
        assert_eq!(picked(9, 0), Some("sm_90a"));
        assert_eq!(picked(10, 0), Some("sm_100a"));
        assert_eq!(picked(10, 3), Some("sm_103a"));
        // sm_100a SASS does not run on 10.3, nor either on a later 10.x: those load the PTX.
        assert_eq!(picked(10, 1), None);
        assert_eq!(picked(12, 0), None);
        assert!(cubins().iter().all(|(_, bytes)| bytes.starts_with(b"\x7fELF")));
    }
}
