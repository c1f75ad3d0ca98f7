//! The Tensor Memory Accelerator: `cp.async.bulk.tensor` (§9.7.9.25.5.1), bulk async-groups
//! (§9.7.9.25.4) and `prefetch.tensormap` (§9.7.9.15).
use super::mbarrier::Barrier;
use core::arch::asm;

/// Generic address of a `CUtensorMap` (a `__grid_constant__` kernel parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct TensorMap(pub u64);

/// `prefetch.tensormap [map];` — bring the descriptor into the cache before the first copy.
#[inline(always)]
pub fn prefetch_tensormap(map: TensorMap) {
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) map.0, options(nostack)) };
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` — copy the
/// box at element coordinates (`x` contiguous, `y` rows) into shared memory at `dst`; the bytes
/// are counted on `bar`. Out-of-bounds elements are written as zeros.
#[inline(always)]
pub fn load_2d(dst: u32, map: TensorMap, x: i32, y: i32, bar: Barrier) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,
            options(nostack)
        )
    };
}

/// As [`load_2d`], `.multicast::cluster`: the box lands at `dst` in every CTA of the cluster whose
/// bit is set in `mask`, and each of them counts the bytes on its own barrier at `bar`'s offset.
#[inline(always)]
pub fn load_2d_multicast(dst: u32, map: TensorMap, x: i32, y: i32, bar: Barrier, mask: u16) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0, k = in(reg16) mask,
            options(nostack)
        )
    };
}

/// As [`load_2d`], `.cta_group::2` (sm_100 family): the bytes are counted on the barrier at
/// `bar`'s offset in the CTA of rank `bar_cta` of this CTA pair (mapped with `mapa`), which may be
/// the peer of the CTA the box lands in. Lets the CTA issuing a `.cta_group::2` MMA wait on one
/// barrier for both CTAs' operands.
#[inline(always)]
pub fn load_2d_cta_group2(dst: u32, map: TensorMap, x: i32, y: i32, bar: Barrier, bar_cta: u32) {
    let remote = super::cluster::mapa(bar.0, bar_cta);
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2 [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, b = in(reg32) remote,
            options(nostack)
        )
    };
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group` — store the box at `src` to
/// element coordinates (`x`, `y`); out-of-bounds elements are not written.
#[inline(always)]
pub fn store_2d(map: TensorMap, x: i32, y: i32, src: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src,
            options(nostack)
        )
    };
}

/// `cp.async.bulk.commit_group;` — close the bulk async-group of this thread's earlier stores.
#[inline(always)]
pub fn commit_group() {
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) };
}

/// `cp.async.bulk.wait_group.read N;` — wait until at most `N` groups still read their shared
/// memory source (the staging buffer may then be rewritten).
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack)) };
}

/// `cp.async.bulk.wait_group N;` — wait until at most `N` groups are incomplete (their writes
/// to global memory done).
#[inline(always)]
pub fn wait_group<const N: u32>() {
    unsafe { asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack)) };
}

/// `cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` — [`load_2d`]
/// for a rank-3 map; `z` is the batch entry.
#[inline(always)]
pub fn load_3d(dst: u32, map: TensorMap, x: i32, y: i32, z: i32, bar: Barrier) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, b = in(reg32) bar.0,
            options(nostack)
        )
    };
}

/// [`load_3d`] with `.multicast::cluster` (see [`load_2d_multicast`]).
#[inline(always)]
pub fn load_3d_multicast(dst: u32, map: TensorMap, x: i32, y: i32, z: i32, bar: Barrier, mask: u16) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}], {k};",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, b = in(reg32) bar.0, k = in(reg16) mask,
            options(nostack)
        )
    };
}

/// [`load_3d`] with `.cta_group::2` (see [`load_2d_cta_group2`]): the bytes are counted on the
/// barrier at `bar`'s offset in the CTA of rank `bar_cta` of this pair.
#[inline(always)]
pub fn load_3d_cta_group2(dst: u32, map: TensorMap, x: i32, y: i32, z: i32, bar: Barrier, bar_cta: u32) {
    let remote = super::cluster::mapa(bar.0, bar_cta);
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2 [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, b = in(reg32) remote,
            options(nostack)
        )
    };
}

/// `cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group` — [`store_2d`] for a rank-3 map.
#[inline(always)]
pub fn store_3d(map: TensorMap, x: i32, y: i32, z: i32, src: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}, {z}}}], [{s}];",
            m = in(reg64) map.0, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, s = in(reg32) src,
            options(nostack)
        )
    };
}
