//! The device scripts name kernels the crate defines; these tests keep the names in step, and
//! check that every script parses. Needs no GPU.

use hgemm_kernels::spec::Family;
use std::collections::BTreeSet;

/// `scripts/device-reliability.sh` runs the sanitizers over the ladder one version at a time
/// (`--kernels vN`) and over every other Hopper entry as the group `variants`, a list it spells
/// out. A kernel missing from that list would get no sanitizer run, and nothing else would say so.
#[test]
fn the_reliability_scripts_variants_are_every_hopper_entry_off_the_ladder() {
    let script = include_str!("../../scripts/device-reliability.sh");
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("VARIANTS="))
        .expect("no VARIANTS= line in scripts/device-reliability.sh");
    let listed: BTreeSet<&str> = line.trim().split(',').collect();
    let ladder: BTreeSet<&str> = hgemm::ladder_of(Family::Hopper).iter().map(|k| k.name).collect();
    let variants: BTreeSet<&str> = hgemm_kernels::kernels()
        .filter(|k| k.family == Family::Hopper && !ladder.contains(k.name))
        .map(|k| k.name)
        .collect();
    assert!(!variants.is_empty());
    assert_eq!(
        listed, variants,
        "VARIANTS in scripts/device-reliability.sh against the crate's Hopper entries off the ladder"
    );
}

/// Every script parses (`bash -n`): the device scripts run on a machine where a typo costs a call.
#[test]
fn every_script_parses() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sh") {
            let out = std::process::Command::new("bash").arg("-n").arg(&path).output().unwrap();
            assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
            checked += 1;
        }
    }
    assert!(checked >= 8, "{checked} scripts in {}", dir.display());
}
