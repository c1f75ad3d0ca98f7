//! The SM budget ([`GemmOp::max_sms`]) through the launch plan, `auto`'s price and tuned choices:
//! every persistent grid and stream-K split within it, every entry that cannot keep it refused
//! with [`Error::SmBudget`], before anything reaches a GPU.

use super::*;
use crate::choose::Model;
use crate::tuned::{Choice, pick};
use hgemm_kernels::hopper;
use hgemm_kernels::spec::Family;

fn hopper_kernels() -> impl Iterator<Item = &'static KernelSpec> {
    hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper)
}

/// Every shape the budget measurement runs, and a few that split by K or take one column.
fn ops() -> Vec<GemmOp> {
    vec![
        GemmOp::new(8192, 8192, 8192),
        GemmOp::new(4096, 57344, 8192).activation(hgemm_kernels::fused::Activation::Silu).gated(),
        GemmOp::new(4096, 8192, 28672),
        GemmOp::new(128, 8192, 8192),
        GemmOp::new(520, 776, 4096),
        GemmOp::new(16, 4096, 4096),
        GemmOp::new(300, 520, 512).batched(3, 300 * 512, 520 * 512, 300 * 520),
    ]
}

#[test]
fn persistent_grids_and_their_splits_stay_within_the_budget() {
    for spec in hgemm_kernels::kernels().filter(|s| s.grid == Grid::Persistent) {
        for op in ops() {
            if supports(spec, &op).is_err() {
                continue;
            }
            // 132 SMs, two CTAs an SM for entries that fit two (what occupancy may report).
            let device = 264 / spec.cluster;
            let free = shape(spec, &op, device).unwrap();
            for budget in [132, 120, 108, 96, 66, 7, spec.cluster] {
                let s = shape(spec, &op.max_sms(budget), device).unwrap();
                assert!(s.grid <= budget && s.grid.is_multiple_of(spec.cluster), "{} {op:?} on {budget}", spec.name);
                // The kernel walks the split it is passed with one worker per cluster of the
                // grid: the host's schedule must be the one for that many workers.
                if let Some(sk) = s.split {
                    let (kop, _) = for_kernel(spec, &op);
                    assert_eq!(Some(sk), spec.schedule(&kop.shape_args(), s.grid / s.cluster), "{}", spec.name);
                    assert_eq!(sk.workers, s.grid / s.cluster, "{}", spec.name);
                }
            }
            // A budget the device's grid does not reach changes nothing.
            assert_eq!(shape(spec, &op.max_sms(10_000), device), Ok(free), "{}", spec.name);
        }
    }
    // 8192³ on v7's pairs: 60 of them on 120 SMs (121 rounds down to whole pairs), 66 without.
    let v7 = &hopper::v7::SPEC;
    let op = GemmOp::new(8192, 8192, 8192);
    assert_eq!(shape(v7, &op, 66).unwrap().grid, 132);
    assert_eq!(shape(v7, &op.max_sms(120), 66).unwrap().grid, 120);
    assert_eq!(shape(v7, &op.max_sms(121), 66).unwrap().grid, 120);
    // The offline plan (what `hgemm plan` prints) keeps it too.
    assert_eq!(launch_offline(v7, &op.max_sms(96), 132).unwrap().grid, 96);
    // A held grid is no programmatic dependent: its CTAs would start on the SMs the budget
    // leaves, while its predecessor's still run. A budget that holds nothing changes nothing.
    assert!(v7.dependent_launch && shape(v7, &op, 66).unwrap().dependent);
    assert!(!shape(v7, &op.max_sms(120), 66).unwrap().dependent);
    assert!(shape(v7, &op.max_sms(132), 66).unwrap().dependent);
    assert_eq!(op.max_sms(132).on_device(132).max_sms, None);
    assert_eq!(op.max_sms(131).on_device(132).max_sms, Some(131));
}

#[test]
fn a_split_is_worked_out_for_the_budget_s_workers() {
    // 12 units of 64 K blocks split across all 66 pairs of 132 SMs; on 40 SMs, across 20.
    let v7 = &hopper::v7::SPEC;
    let op = GemmOp::new(520, 776, 4096);
    let free = shape(v7, &op, 66).unwrap();
    let held = shape(v7, &op.max_sms(40), 66).unwrap();
    assert_eq!((free.grid, held.grid), (132, 40));
    let (free, held) = (free.split.unwrap(), held.split.unwrap());
    assert_eq!((free.workers, held.workers), (66, 20));
    assert_ne!(free, held);
}

#[test]
fn entries_that_cannot_keep_a_budget_are_refused_with_the_reason() {
    let op = GemmOp::new(4096, 4096, 4096);
    // One CTA per tile: the grid is the tiles', whatever the budget.
    for spec in hgemm_kernels::kernels().filter(|s| s.grid == Grid::PerTile) {
        assert!(supports(spec, &op).is_ok(), "{}", spec.name);
        let r = supports(spec, &op.max_sms(100));
        assert!(
            matches!(&r, Err(Error::SmBudget { kernel, max_sms: 100, reason }) if *kernel == spec.name && reason.contains("one CTA per tile")),
            "{}: {r:?}",
            spec.name
        );
        assert!(matches!(shape(spec, &op.max_sms(100), u32::MAX), Err(Error::SmBudget { .. })), "{}", spec.name);
    }
    // Fewer SMs than a cluster.
    let v7 = &hopper::v7::SPEC;
    assert_eq!(v7.cluster, 2);
    let r = supports(v7, &op.max_sms(1));
    assert!(matches!(&r, Err(Error::SmBudget { max_sms: 1, reason, .. }) if reason.contains("clusters of 2")), "{r:?}");
    assert!(matches!(shape(v7, &op.max_sms(1), 66), Err(Error::SmBudget { .. })));
    assert!(supports(v7, &op.max_sms(2)).is_ok());
    // No budget at all: refused by the call's own checks, for every entry and for `auto`.
    let zero = op.max_sms(0);
    assert!(matches!(zero.validate_shape(), Err(Error::SmBudget { max_sms: 0, .. })));
    for spec in hgemm_kernels::kernels() {
        assert!(matches!(supports(spec, &zero), Err(Error::SmBudget { max_sms: 0, .. })), "{}", spec.name);
    }
    assert!(Choice::priced(hopper_kernels(), &zero, 132, &Model::BUILT_IN).is_none());
    // The message names the kernel, the budget and why.
    let text = supports(&hopper::v0::SPEC, &op.max_sms(100)).unwrap_err().to_string();
    assert!(
        text.starts_with("hopper_v0 cannot run within a budget of 100 SMs: it launches one CTA per tile"),
        "{text}"
    );
}

#[test]
fn auto_picks_only_entries_that_keep_the_budget_and_prices_on_its_sms() {
    for op in ops() {
        for budget in [132, 120, 96, 66, 7, 2, 1] {
            let held = op.max_sms(budget);
            let Some(c) = Choice::priced(hopper_kernels(), &held, 132, &Model::BUILT_IN) else {
                // Only one SM leaves nothing: every entry `auto` weighs here has pairs, and the
                // entries without a cluster are priced only where a pair would share nothing.
                assert_eq!(budget, 1, "{op:?}");
                continue;
            };
            assert!(supports(c.kernel, &held).is_ok(), "{} for {op:?} on {budget}", c.kernel.name);
            assert!(c.kernel.grid == Grid::Persistent && c.kernel.cluster <= budget);
            // Priced on the budget's SMs: what `choose` picks for a device of that many.
            assert_eq!(
                Some(c.kernel.name),
                crate::choose::choose(hopper_kernels(), &held, budget, &Model::BUILT_IN).map(|k| k.name),
                "{op:?} on {budget}"
            );
        }
        // The full device's budget is no budget.
        assert_eq!(
            Choice::priced(hopper_kernels(), &op.max_sms(132), 132, &Model::BUILT_IN),
            Choice::priced(hopper_kernels(), &op, 132, &Model::BUILT_IN)
        );
    }
    // One SM: only an entry without a cluster keeps it.
    let one = Choice::priced(hopper_kernels(), &GemmOp::new(16, 4096, 4096).max_sms(1), 132, &Model::BUILT_IN).unwrap();
    assert_eq!(one.kernel.cluster, 1, "{}", one.kernel.name);
}

#[test]
fn tuned_choices_give_way_where_their_entry_cannot_keep_the_budget() {
    let op = GemmOp::new(4096, 4096, 4096);
    let paired = Some(Choice { kernel: &hopper::v7::SPEC, split: true });
    assert_eq!(pick(paired, hopper_kernels(), &op, 0x1000, 132, &Model::BUILT_IN), paired);
    assert_eq!(
        pick(paired, hopper_kernels(), &op.max_sms(64), 0x1000, 132, &Model::BUILT_IN),
        paired,
        "kept: its grid is cut"
    );
    // Its pairs do not fit one SM: `auto` prices among those that do.
    let thin = GemmOp::new(16, 4096, 4096).max_sms(1);
    let one = pick(paired, hopper_kernels(), &thin, 0x1000, 132, &Model::BUILT_IN).unwrap();
    assert!(one.kernel.cluster == 1 && supports(one.kernel, &thin).is_ok(), "{}", one.kernel.name);
    assert_eq!(pick(paired, hopper_kernels(), &op.max_sms(1), 0x1000, 132, &Model::BUILT_IN), None);
    // A ladder entry with one CTA per tile, however it got into a table, is never run under one.
    let per_tile = Some(Choice { kernel: &hopper::v0::SPEC, split: false });
    assert_eq!(pick(per_tile, hopper_kernels(), &op, 0x1000, 132, &Model::BUILT_IN), per_tile);
    let held = pick(per_tile, hopper_kernels(), &op.max_sms(100), 0x1000, 132, &Model::BUILT_IN).unwrap();
    assert_eq!(held.kernel.grid, Grid::Persistent, "{}", held.kernel.name);
}

#[test]
fn budgets_combine_to_the_tighter() {
    let op = GemmOp::new(64, 64, 64);
    assert_eq!(op.within(None).max_sms, None);
    assert_eq!(op.within(Some(100)).max_sms, Some(100));
    assert_eq!(op.max_sms(90).within(Some(100)).max_sms, Some(90));
    assert_eq!(op.max_sms(120).within(Some(100)).max_sms, Some(100));
    assert_eq!(op.max_sms(120).within(None).max_sms, Some(120));
    assert_eq!((op.sms_on(132), op.max_sms(96).sms_on(132), op.max_sms(200).sms_on(132)), (132, 96, 132));
}
