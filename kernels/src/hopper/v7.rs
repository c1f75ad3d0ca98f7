//! Hopper v7 — v6's pipeline as the library's GEMM: a tile shape per problem size, stream-K for
//! the last wave, either storage order for A and B, strided batches, alpha/beta, L2 promotion.
//!
//! The measured v6 design (persistent 2-CTA clusters, a producer warpgroup and two consumer
//! warpgroups with `setmaxnreg`, 4 stages, a TMA-store epilogue) is kept and generalised:
//! - **Tile shapes** ([`Tile`]): [`Wide`] is v6's 128×256 tile in clusters of two. [`Mid`] is
//!   128×192 (4 stages), for outputs that 192 columns cover in fewer waves (768×4096×4096: 0.96×
//!   cuBLAS against 0.84× for wide tiles split in K). For outputs too small to give every SM a
//!   wide tile, [`Square`] is 128×128 (two consumers, 6 stages): 512×4096×4096 makes 64 wide
//!   tiles for 132 SMs but 128 square ones, 0.97× cuBLAS against 0.88× for wide tiles split in
//!   K. [`Slim`] is 64×128 with a single consumer warpgroup and 8 stages, for M = 128 or 256
//!   (M = 128, N = 8192 makes 32 wide tiles, but 128 slim ones); its m64n128 MMAs read 25% fewer
//!   shared-memory bytes per FLOP than the two m64n64 of a 128×64 tile, which measured 7% faster
//!   at M = 128. [`Lean`] is 64×192 with a single consumer and 6 stages, for N from 129 to 192
//!   (4096×160×4096: 1.11× cuBLAS against 0.93× for mid tiles). [`Trim`] is the lean tile 160
//!   wide, for N from 129 to 160, which one column of its tiles covers (8192×160×8192: 0.89×
//!   cuBLAS against 0.82× for lean tiles), and [`MidTrim`] the mid tile 160 wide, for the same
//!   outputs at large M (16384×160×5120: 0.98× against 0.90× for mid tiles); [`WideTrim`] is
//!   the wide tile 224 wide, for N from 193 to 224 (32768×224×4096: 1.00× against 0.86× for
//!   wide tiles). These eight pair CTAs along M to share B. [`Twin80`], [`Twin96`] and
//!   [`Twin112`] are 128 rows by 80, 96 or 112 columns in pairs that lie along N instead and
//!   share A ([`Tile::ALONG_N`]): for N of 129–224 at large M, where A is the operand read from
//!   DRAM and B stays in L2 (8192×160×8192: 1.00× cuBLAS against 0.88× for the trim tile;
//!   cuBLAS's design there), and in several columns of pairs where they fill one wave
//!   (4096×448×4096: 1.02× against 0.88× for square pairs). For M ≤ 64, where half of a slim
//!   pair would compute rows past M, and for N ≤ 64, [`Thin`] is 64×64 with no cluster
//!   (64×4096×4096: 1.00× cuBLAS against 0.86× for slim pairs). For M ≤ 32 at large N,
//!   [`Narrow32`] and [`Narrow16`] are thin tiles 32 and 16 columns wide in pairs, written
//!   column-major, so that the pair shares A and the MMAs compute no more than 16 or 32 rows of
//!   C (16×14336×4096: 0.96× cuBLAS against 0.93× for thin tiles); [`Narrow96`] is 96 wide, for
//!   M or N from 65 to 96 (96×14336×4096: 0.96× against 0.90× for lean pairs). The host picks by
//!   the number of waves each shape needs.
//! - **Tiles side by side**: a tile that 64-column staging boxes do not divide (160, 224, 96, and
//!   the twins' 80, 96 and 112) ends on a box moved back to end with it, overlapping the box
//!   before, in v6's epilogue (a twin pair's two tiles always sit side by side); the
//!   trimmed tiles then run two columns of tiles for M or N of 257–320 and 385–448, where the
//!   tiles before computed 384 or 512 (320×8192×8192: 0.97× cuBLAS against 0.85×), and the
//!   160-column tiles four for 513–640 (600×8192×8192: 0.91× against 0.77×), and five or more
//!   where they make one or two waves of whole tiles (512×5120×8192: 1.02× against 0.92× for wide
//!   tiles split by K).
//! - **C column-major** (the `_cm` entries of the lean, mid, trimmed, narrow and twin tiles): the epilogue
//!   writes each staging box transposed (two 2-byte stores per register pair) and stores it at
//!   C's transposed coordinates. The host hands a call with a row-major C to these entries as
//!   Cᵀ = B·Aᵀ, so that a small M becomes the tile's 160, 192 or 224 columns, where every
//!   tile in the normal orientation computes 256 rows: 160×8192×8192 0.73× → 0.84× cuBLAS
//!   (lean; 0.88× trim), 320×8192×8192 0.78× → 0.85× (mid: one wave of pairs where the lean tile
//!   takes two). TMA writes all of C (C's contiguous dimension a multiple of 8; the host keeps
//!   other calls off these entries).
//! - **Edge maps**: the CTAs whose share of a K-major A's (B's) rows crosses M (N) load it
//!   through a second tensor map whose box ends there, and shares wholly past M (N) are not loaded,
//!   where whole boxes would make TMA fill the rows past the end with zeros, which costs more
//!   than loading them ([`crate::spec::KernelSpec::a_edge_box`]). Fitting the box where M < a
//!   tile took 16×14336×4096 from 0.68× to 0.92× cuBLAS; edge maps for every last tile row and
//!   column took 4096×192×4096 from 0.57× to 0.84×, 80×8192×8192 from 0.84× to 0.94×.
//! - **Stream-K** ([`crate::sched::StreamK`]): 8192³ is 15.5 waves of wide tiles on 66 pairs,
//!   so a whole-tile schedule leaves half the pairs idle for the last one. When the split part
//!   is at most an eighth of the work, or whole tiles would leave more than an eighth of the
//!   waves' pairs idle (3000³: 2.2 waves), or there are fewer tiles than pairs and K is deep, the
//!   last waves' K blocks are dealt out evenly instead: a tile may be begun by one pair and
//!   finished by the next, which adds the f32 partial sum the first left in a workspace. Where
//!   more than an eighth would be split, the incomplete wave alone is, if that shortens the path
//!   (6144³ +0.4–1.6%, 4096×11008×4096 +2.5–4%). The host chooses the split and passes it
//!   ([`crate::args::GemmArgs::dp_units`], `share`); the kernel walks it as given. Thin tiles,
//!   which stream B from DRAM, split every unit instead ([`Tile::SPREAD`]): 1.3–3% at N = 28672
//!   and M ≤ 64.
//! - **Waves in step, snaking through L2** (stream-K launches): before each whole wave, a
//!   cluster's producer waits until every cluster has issued the loads of the wave before
//!   (`kernels/src/rendezvous.rs`), so that the clusters of a wave keep sharing their operands in L2
//!   instead of drifting apart; odd waves load K from its end ([`crate::sched::Work::k_descending`])
//!   and odd groups of tile rows walk N from its end ([`crate::sched::TileScheduler::tile_snaking`]),
//!   so that a wave begins on what the wave before it loaded last. DRAM reads at 8192³ 1.41 →
//!   1.16 GB, at 16384³ 31.4 → 8.6 GB; in one call against the code before, 8192³ 1.039 against
//!   1.031, 16384³ 1.030 against 1.015 (medians of four rounds).
//! - **Storage order**: an M-major A (column-major) or N-major B (C = A·B with B row-major) is
//!   loaded as 64-element-wide TMA boxes along M or N and read with `wgmma`'s transpose bits and
//!   MN-major descriptors; nothing is transposed in memory.
//! - **Batches**: rank-3 tensor maps whose outer dimension is the batch entry; the tile order
//!   walks batch entries one after the other.
//! - **alpha, beta**: C = alpha·A·B + beta·C. With beta ≠ 0 the staging box is first filled with
//!   the old C by a TMA load on the consumer's own mbarrier; with beta = 0, C is never read.
//!   Calls with alpha = 1 and beta = 0 take v6's epilogue loop unchanged (it is faster, and too
//!   tight in registers to carry the scaling).
//! - **Ragged C**: where TMA cannot address C (a leading dimension or batch stride that is not a
//!   multiple of 8 elements, or C starting mid-chunk: `staging::tma_can_write`), the warpgroup's
//!   threads store each staged box a row at a time and load it for beta (`Output::store_box`,
//!   `load_box`), in the epilogue that scales. 4096×50257×4096: 0.93 of the same call with
//!   N = 50264 (pair by pair from registers, the wide tile trimmed's way: 0.84); cuBLAS 0.14.
//! - **L2 promotion** of 256 bytes on the operand loads.
//! - **Uniform descriptors**: the consumer's index and each K slice's stage are broadcast from
//!   lane 0 (`shfl.sync`), which tells ptxas they are warp-uniform; it then computes the `wgmma`
//!   descriptors and the release addresses in uniform registers, which HGMMA reads directly. A
//!   K slice costs a warp 31 vector instructions (and 29 uniform ones) instead of 79. On this
//!   power-capped card fewer instructions is less energy: +0.5% on the sweep.
//! - **Held tile** ([`Tile::HOLD`], the wide tile): when a tile finishes, its four 64-column
//!   boxes wait in registers as packed bf16 (`Held`) instead of being staged; the next piece
//!   stages one of them after each of its first four K slices' MMAs are issued, so that the
//!   staging runs while they do and the tensor cores no longer wait for an epilogue between
//!   tiles. (A piece too short to stage them, and the end of the walk, stage what is left.)
//!   Holding the last two boxes, against none, two sweeps each in one call: geometric mean
//!   1.006 and 1.006 against 0.996 and 1.000; all four, against two, three: 1.0049–1.0066
//!   against 1.0022–1.0037, 8192³ 1.033 against 1.017.
//! - **Programmatic dependent launch**: the host launches v7 with programmatic stream
//!   serialization, so a call is scheduled onto each SM as the previous kernel in the stream
//!   leaves it and runs its prologue (tensor-map prefetch, barrier init, the cluster barrier)
//!   there; every thread then waits (`griddepcontrol.wait`) before touching global memory. When
//!   a CTA starts its last tile it lets the next kernel do the same. Worth 1.5–4% on calls of
//!   30–200 µs (2048³, 128×8192×8192, 8192×1024×8192), nothing measurable on long ones.
//!
//! ```text
//! thread 0, then all threads   : prefetch maps, init barriers; cluster barrier → griddepcontrol.wait
//! producer (1 thread)          : stream-K launches, whole waves: rank 0 waits for every cluster
//!                                to have issued the wave before (global counter)
//!                                last tile only: griddepcontrol.launch_dependents
//!                                per tile, per K slice (odd waves: last to first):
//!                                wait(empty[s]) → expect_tx(full[s]) → TMA A box(es)
//!                                → TMA B box(es); of the operand the pair shares (B, or A
//!                                for the twins) this CTA's half, multicast
//!                                after a whole unit: count it (rank 0)
//!                                at the end: wait(empty[s]) for every stage, then exit
//! consumer wg                  : wait(full[s]) → 4 × wgmma → wait_group 1 → release s-1 in both CTAs
//!                                [wide: the first four slices of a piece each stage and store
//!                                one held box of the previous tile, as below]
//!                                end of piece: wait_group 0 → release the last s (K = 0: none)
//!                                unfinished piece: st.global partial → bar → st.release flag; done
//!                                finishing piece: per earlier worker: ld.acquire flag → bar → add
//!                                per 64-column box: [beta≠0: TMA load C → wait(c_load)] → scale
//!                                → st.shared (transposed for `_cm`) → fence.proxy.async
//!                                → TMA store (one in flight); wide, alpha = 1, beta = 0: the
//!                                boxes held as packed bf16 instead
//! ```
//!
//! Registers (`setmaxnreg`): producer 40, consumers 232; for the wide tile 24 and 240, the room
//! its held boxes take (64 registers beside the accumulator's 128), and for the wide tile trimmed
//! to 224 the same (its consumers spilled at 232 once its last box could move).
//!
//! Measured on an H200 at 8192³ (2026-12-01, thirty-sixth session's final run, paired with
//! cuBLAS in one process, a card that clocked a median 1485 MHz under the cap): 692 TFLOP/s,
//! 1.028× cuBLAS (v6: 1.019×); the same kernel as `auto` and `direct` read 1.032× and 1.033×, and
//! 1.048× in the sweep, whose geometric mean was 1.012. Over the sixteen final runs of the
//! thirty-first to forty-eighth sessions (2026-12-01 to 12-04), the 64 readings of this kernel
//! at 8192³ have a median of 1.042 (1.027–1.062; the README's table). Its tensor pipe is busy
//! 97.2% of its cycles (`ncu`; cuBLAS's 93.5%).
//! Stream-K on against off, four runs: +0.8–3.7% at 8192³, +1.9–2.7% at 16384³.
//! 128×8192×8192 with the slim tile: 1.00–1.015× (0.88× with the 128×64 tile it replaced, 0.96×
//! before programmatic dependent launch).
use crate::spec::{share_rows, Family, Grid, KernelSpec, L2Promotion, Major, SmemPlan, StreamKSpec, Swizzle, TmaBox};
#[cfg(hopper)]
use crate::{
    desc::wgmma::SmemDesc,
    ptx::wgmma::Fragment,
    staging::{ColMajorC, RowMajorC},
};

/// Depth of a K slice: one 128-byte swizzle span of bf16.
pub const BK: u32 = 64;
const GROUP_M: u32 = 8;
/// Width of a swizzled TMA box along K (K-major) or along M/N (MN-major): 128 bytes.
const SPAN: u32 = 64;
const C_BOX: TmaBox = TmaBox::new(crate::staging::BOX_COLS, 64, Swizzle::B128);

/// A CTA tile shape: `BM` × `BN` with each consumer warpgroup holding 64 × `BN`.
pub trait Tile {
    /// Consumer warpgroups; each holds 64 rows of the tile.
    const CONSUMERS: u32;
    const BM: u32 = 64 * Self::CONSUMERS;
    const BN: u32;
    /// CTAs per cluster, stacked along M; they split B and multicast it (unless `ALONG_N`).
    const CLUSTER: u32;
    /// The cluster's CTAs sit side by side along N instead, and split A and multicast it.
    const ALONG_N: bool = false;
    const STAGES: u32;
    /// Each consumer's 64 × `BN` accumulator; its `wgmma` is the tile's MMA.
    #[cfg(hopper)]
    type Acc: Fragment;
    /// A finished tile waits in registers as packed bf16 (`Tile::Held`) and is staged box by
    /// box during the next unit's first K slices, while its MMAs run, instead of between the two.
    const HOLD: bool = false;
    /// `setmaxnreg` of the producer and of the consumers: their sum over the CTA's threads is the
    /// register file (384 threads × 168); a held tile needs the consumers' 240.
    const PRODUCER_REGS: u32 = 40;
    const CONSUMER_REGS: u32 = 232;
    /// Stream-K over every unit instead of whole waves kept in step and the last ones split
    /// ([`crate::spec::StreamKSpec::spread`]).
    const SPREAD: bool = false;
    /// Where TMA writes none of C, the warpgroup's threads store each staged box a row at a time
    /// (`Output::store_box`); otherwise each thread stores its fragment's pairs.
    const THREADS_STORE: bool = true;
    /// What a consumer holds of a finished tile (`()` where nothing is held).
    #[cfg(hopper)]
    type Held: Held<Self::Acc>;
}

/// The last [`Held::BOXES`] 64-column boxes of a consumer's finished 64 × `BN` tile as packed
/// bf16 pairs, for [`Tile::HOLD`]; the boxes before them, if any, are staged when the tile
/// finishes.
#[cfg(hopper)]
pub trait Held<F: Fragment>: Copy {
    /// Boxes held.
    const BOXES: u32;
    /// The held boxes of the fragment rounded to bf16.
    fn pack(acc: &F) -> Self;
    /// Nothing to stage: set where a tile is stored without being held (alpha/beta), so that the
    /// registers of the tile held before it are dead there instead of live beside the
    /// accumulator (which spilled).
    fn none() -> Self;
    /// `f(i, pair)` for the 16 register pairs of box `j` (fragment pairs 16j + i), straight-line:
    /// `j` picks among registers by selects, so nothing is indexed at run time.
    fn for_each_in_box(&self, j: u32, f: impl FnMut(u32, u32));
}

#[cfg(hopper)]
impl<F: Fragment> Held<F> for () {
    const BOXES: u32 = 0;
    fn pack(_: &F) -> Self {}
    fn none() -> Self {}
    fn for_each_in_box(&self, _: u32, _: impl FnMut(u32, u32)) {}
}

/// All four boxes of a 64×256 fragment: 64 registers beside the accumulator's 128, which fit in
/// the consumers' 240 with no spill once nothing else keeps them live (`Held::none`); holding
/// two of them measured 1.6% slower at 8192³ (`docs/performance.md`, "Holding the whole finished
/// tile").
#[cfg(hopper)]
impl<F: Fragment> Held<F> for [u32; 64] {
    const BOXES: u32 = 4;

    #[inline(always)]
    fn pack(acc: &F) -> Self {
        let mut h = [0; 64];
        acc.for_each_pair(|p, lo, hi| {
            h[p as usize] = crate::ptx::cvt::rn_bf16x2_f32(lo, hi);
        });
        h
    }

    #[inline(always)]
    fn none() -> Self {
        [0; 64]
    }

    #[inline(always)]
    fn for_each_in_box(&self, j: u32, mut f: impl FnMut(u32, u32)) {
        use core::hint::select_unpredictable as sel;
        macro_rules! pairs {
            ($($i:literal)*) => {$(
                f($i, sel(j < 2, sel(j == 0, self[$i], self[16 + $i]), sel(j == 2, self[32 + $i], self[48 + $i])));
            )*};
        }
        pairs!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }
}

/// 128×256, clusters of two: v6's tile.
pub struct Wide;
/// 128×192 with two consumers, clusters of two (256×192 per cluster), 4 stages: for outputs
/// that 192 columns cover in fewer waves than 256 (768×4096: 1.5 waves of wide tiles or of
/// square ones, 1.0 of these), and written column-major for a small M at large N (`_cm`). K-major
/// B only: each CTA's 96 rows of B are not whole 64-wide boxes of an N-major B.
pub struct Mid;
/// 128×128 with two consumers, clusters of two (256×128 per cluster), 6 stages: for outputs with
/// too few wide tiles to fill the SMs (512×4096: 64 wide tiles, 128 square ones, for 132 SMs).
pub struct Square;
/// 64×128 with one consumer, clusters of two (128×128 per cluster), 8 stages: for outputs
/// smaller still (M = 128 or 256).
pub struct Slim;
/// 64×192 with one consumer, clusters of two (128×192 per cluster), 6 stages: for outputs 129 to
/// 192 wide, as the entry that writes C column-major (`_cm`), where the operands trade places
/// and M is the tile's 192 columns (160×8192: 128 of these against 64 square pairs that compute
/// 256 rows), and as a plain entry for N from 129 to 192. K-major A and B only, as [`Mid`].
/// (`auto` runs [`Twin80`] and [`Twin96`] pairs for most of those outputs now; the lean tile
/// keeps others, such as 384×4096×4096.)
pub struct Lean;
/// 64×160 with one consumer, clusters of two, 6 stages: the lean tile trimmed to 160 columns,
/// for outputs 129 to 160 wide (or, written column-major, tall), which the lean tile covers with
/// up to 63 columns to spare. Its staging boxes are 64 columns wide like the others, and v6's
/// epilogue (alpha = 1, beta = 0) moves the last one back to end with the tile, so that tiles
/// may sit side by side (`staging::shifts_last_box`): two columns of them for N from 257 to 320
/// at M of 4096 or less (2048×320×4096: 1.04× cuBLAS against 0.82× for slim pairs), four for
/// 513 to 640 where that is one wave of whole tiles (2048×640×4096: 0.95× against 0.86× for
/// square pairs), and five or more where they make one or two (128×10240×4096: 1.05× against
/// 0.95× for slim pairs split by K). With alpha
/// and beta the entry takes one column of tiles ([`KernelSpec::takes_one_column`]). (For one
/// column at large M or N `auto` runs [`Twin80`] pairs now.)
pub struct Trim;
/// 128×160 with two consumers, clusters of two, 4 stages: the mid tile trimmed to 160 columns,
/// as [`Trim`] is the lean one, for outputs 129 to 160 wide (or tall) and so long that trim
/// pairs would take more than one wave, and side by side like [`Trim`] for 257 to 320 (cuBLAS's
/// tile at 320×8192×8192; 8192×320×8192: 0.99× cuBLAS against 0.85× for mid tiles) and in four
/// columns for 513 to 640 (8192×600×8192: 0.90× against 0.78× for square pairs), and in five or
/// more where that makes one or two waves of whole tiles (1024×5120×5120: 0.97× against 0.91×
/// for wide tiles split by K).
pub struct MidTrim;
/// 128×224 with two consumers, clusters of two, 4 stages: the wide tile trimmed to 224 columns,
/// for outputs 193 to 224 wide (or tall), which the wide tile covers with up to 63 columns to
/// spare, and side by side like [`Trim`] for 385 to 448 (8192×448×8192: 1.04× cuBLAS against
/// 0.92× for wide tiles).
pub struct WideTrim;
/// 64×64 with one consumer and no cluster, 12 stages: for M ≤ 64, where one row of tiles covers
/// C and the call is bound by reading B (N = 4096 makes 64 of these for 132 SMs against 32
/// pairs of slim tiles, whose second CTA would only compute rows past M), and for N ≤ 64, where
/// one column covers C and each tile reads its own rows of A. (For M ≤ 32 with N a multiple of 8
/// the host takes the narrow pairs below instead.)
pub struct Thin;
/// 64×32 with one consumer, clusters of two, 16 stages, written column-major only (`_cm`): for
/// M from 17 to 32 where N is a multiple of 8. The host hands the call over as Cᵀ = B·Aᵀ, so
/// each CTA streams 64 rows of B, the pair shares A's rows by multicast, and the MMA (m64n32)
/// computes 32 rows of C where the thin tile computes 64. This is the design of cuBLAS's small-M
/// kernels (`docs/performance.md`, "Small M and the square tile against cuBLAS's kernels").
/// Measured against thin tiles forced (twenty-first session): 32×28672×4096 0.964× cuBLAS
/// against 0.943×; the transposed form alone gained nothing, pairs 0–1.3%, the narrower MMA the
/// rest. One column of tiles only, like [`Trim`].
pub struct Narrow32;
/// [`Narrow32`] 16 columns wide (m64n16), for M ≤ 16.
pub struct Narrow16;
/// 64×96 with one consumer, clusters of two, 10 stages: for M or N from 65 to 96, which slim
/// pairs (64×128) cover with up to 63 columns to spare. Written column-major (`_cm`) for a
/// small M, as [`Narrow32`] is, or plainly for a small N; its last box moves back like
/// [`Trim`]'s, but `auto` runs one column of them (two read 0.72× cuBLAS at 8192×192×8192, the
/// lean tile 0.88×). Measured against what `auto` ran before, forced (twenty-first session): 96×14336×4096
/// 0.963× cuBLAS against 0.895× (lean pairs), 8192×96×8192 1.007× against 0.936× (slim pairs).
pub struct Narrow96;
/// 128×80 with two consumers and 7 stages, in clusters of two side by side along N
/// ([`Tile::ALONG_N`]): a pair covers 128×160 like a pair of [`Trim`] tiles, but shares A's rows
/// instead of B's. Where M is large and N at most 160, A is the operand read from DRAM, and the
/// pair multicasts it instead of the few rows of B that stay in L2: cuBLAS's design at
/// 8192×160×8192 (`nvjet_sm90_tst_80x128_64x8_2x1`; `docs/performance.md`). The same slim pairs
/// ran 128×8192×8192, where they share the streamed operand, 6–8% faster than 8192×128×8192,
/// where they share the other; the twin pair ran 8192×160×8192 at 1.00× cuBLAS against 0.88×
/// for the trim tile (twenty-fourth session). Written column-major (`_cm`) for a small M.
pub struct Twin80;
/// [`Twin80`] 96 columns wide, 6 stages: pairs cover N of 161–192 (cuBLAS's
/// `nvjet_sm90_tst_96x128_64x7_2x1` at 8192×192×8192).
pub struct Twin96;
/// [`Twin80`] 112 columns wide, 6 stages: pairs cover N of 193–224.
pub struct Twin112;

impl Tile for Wide {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 256;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 128];
    const HOLD: bool = true;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 240;
    // Beside the hang guard's bounded waits the copy doubled the diagnostic build's spills (8
    // bytes of local memory to 16, 24 bytes loaded to 64); that build stores a ragged C pair by
    // pair.
    const THREADS_STORE: bool = !cfg!(hang_guard);
    #[cfg(hopper)]
    type Held = [u32; 64];
}

impl Tile for Mid {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 192;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 96];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Square {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Slim {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 8;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Lean {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 192;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 96];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Trim {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for MidTrim {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for WideTrim {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 224;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    // The wide tile's split: with 232 its consumers spilled 16 bytes once the epilogue could
    // move its last box back (twenty-second session).
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 240;
    // Staging boxes for its threads to store spilled 16–32 bytes wherever the copy stood (in
    // either epilogue, loading C for beta or not; thirty-eighth session).
    const THREADS_STORE: bool = false;
    #[cfg(hopper)]
    type Acc = [f32; 112];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Thin {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 64;
    const CLUSTER: u32 = 1;
    const STAGES: u32 = 12;
    /// Thin tiles stream B from DRAM, each its own columns, so a wave shares nothing in L2 that
    /// keeping it in step would save; spread evenly, every SM streams the same number of K blocks.
    /// N = 28672 (448 units on 132 SMs, 264 of them whole before): 1.3–3.0% faster at M = 1–32
    /// and K = 4096 or 8192 (1x28672x8192 0.925 → 0.947 cuBLAS, 32x28672x4096 0.922 → 0.947),
    /// 1.8% at 64x28672x4096, 0.4% at 64x28672x8192 (twentieth session, four rounds each).
    const SPREAD: bool = true;
    #[cfg(hopper)]
    type Acc = [f32; 32];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Narrow32 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 32;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 16;
    /// Each pair streams its own rows of B, as thin tiles do.
    const SPREAD: bool = true;
    #[cfg(hopper)]
    type Acc = [f32; 16];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Narrow16 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 16;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 16;
    const SPREAD: bool = true;
    #[cfg(hopper)]
    type Acc = [f32; 8];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Narrow96 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 96;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 10;
    #[cfg(hopper)]
    type Acc = [f32; 48];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Twin80 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 80;
    const CLUSTER: u32 = 2;
    const ALONG_N: bool = true;
    const STAGES: u32 = 7;
    #[cfg(hopper)]
    type Acc = [f32; 40];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Twin96 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 96;
    const CLUSTER: u32 = 2;
    const ALONG_N: bool = true;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 48];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Twin112 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 112;
    const CLUSTER: u32 = 2;
    const ALONG_N: bool = true;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 56];
    #[cfg(hopper)]
    type Held = ();
}

const fn major(mn: bool) -> Major {
    if mn { Major::MN } else { Major::K }
}

/// The box A is loaded in: this CTA's share of the tile's rows K-major (`BM`, or `BM / CLUSTER`
/// where the cluster lies along N), or 64(M)×64(K) MN-major pieces.
const fn a_box<T: Tile>(mn: bool) -> TmaBox {
    let b = if mn { TmaBox::new(SPAN, BK, Swizzle::B128) } else { TmaBox::new(BK, share_rows(T::BM, T::CLUSTER, T::ALONG_N), Swizzle::B128) };
    b.promote_l2(L2Promotion::B256)
}

/// The box B is loaded in: this CTA's share of the tile's rows K-major (`BN / CLUSTER`, or `BN`
/// where the cluster lies along N), or 64(N)×64(K) MN-major pieces.
const fn b_box<T: Tile>(mn: bool) -> TmaBox {
    let b = if mn { TmaBox::new(SPAN, BK, Swizzle::B128) } else { TmaBox::new(BK, share_rows(T::BN, T::CLUSTER, !T::ALONG_N), Swizzle::B128) };
    b.promote_l2(L2Promotion::B256)
}

/// Stage the last `C_BOX.inner` columns of a consumer's tile into `buf`: the last box of a tile
/// that boxes do not divide ([`crate::staging::shifts_last_box`]), in v6's epilogue. A pass of
/// its own after the loop over the other boxes, not a second case inside it: folded into that
/// loop, the wide tile trimmed to 224 spilled even at 240 registers (twenty-second session).
#[cfg(hopper)]
#[inline(always)]
fn stage_shifted_last_box<T: Tile, C: crate::staging::Orientation>(acc: &T::Acc, buf: crate::staging::Staging, warp: u32, lane: u32) {
    let first = T::BN - C_BOX.inner;
    acc.for_each_pair(|p, lo, hi| {
        let col = 8 * (p / 2) + 2 * (lane % 4);
        if col >= first {
            C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col - first, crate::ptx::cvt::rn_bf16x2_f32(lo, hi));
        }
    });
}

/// Operand stages, two staging boxes per consumer, `full`/`empty` per stage and a C-load barrier
/// per consumer.
const fn smem<T: Tile>() -> SmemPlan {
    SmemPlan::new(T::STAGES, T::BM * BK * 2, T::BN * BK * 2, T::CONSUMERS * 2 * C_BOX.bytes(), 2 * T::STAGES + T::CONSUMERS)
}

/// One CTA's f32 partial tile in the stream-K workspace: each consumer's 64 × `BN` fragment.
const fn partial_bytes<T: Tile>() -> u32 {
    T::CONSUMERS * 64 * T::BN * 4
}

const fn spec<T: Tile>(name: &'static str, a_mn: bool, b_mn: bool, c_col: bool) -> KernelSpec {
    // An N-major B arrives in boxes 64 wide along N, so each CTA's share of B must be whole boxes
    // (the mid tile's 96 rows are not: it takes a K-major B only).
    // Pairs along N take K-major operands only: their shares of A would have to be whole pieces.
    assert!(!T::ALONG_N || !(a_mn || b_mn), "pairs along N take K-major A and B only");
    assert!(!b_mn || (T::BN / T::CLUSTER).is_multiple_of(SPAN), "B's share per CTA is not whole 64-wide boxes");
    let s = KernelSpec {
        name,
        family: Family::Hopper,
        version: 7,
        adds: "tile shape per problem, either storage order, batches, alpha/beta, L2 promotion",
        tile_m: T::BM,
        tile_n: T::BN,
        group_m: GROUP_M,
        threads: 128 * (1 + T::CONSUMERS),
        cluster: T::CLUSTER,
        cluster_along_n: T::ALONG_N,
        grid: Grid::Persistent,
        smem_bytes: smem::<T>().bytes,
        a_box: a_box::<T>(a_mn),
        b_box: b_box::<T>(b_mn),
        c_box: Some(C_BOX),
        a_major: major(a_mn),
        b_major: major(b_mn),
        general: true,
        edge_maps: true,
        c_col_major: c_col,
        stream_k: Some(StreamKSpec { block_k: BK, partial_bytes: partial_bytes::<T>(), spread: T::SPREAD }),
        dependent_launch: true,
        holds_tile: T::HOLD,
    };
    // A K-major operand's box is a CTA's share, which the edge maps and the byte counts assume.
    assert!(a_mn || s.a_box.outer == s.a_share_rows(), "A's box is not a CTA's share of A");
    assert!(b_mn || s.b_box.outer == s.b_share_rows(), "B's box is not a CTA's share of B");
    s
}

/// The ladder's v7: wide tiles, A and B K-major (C = A·Bᵀ, both row-major).
pub const SPEC: KernelSpec = spec::<Wide>("hopper_v7", false, false, false);

/// Every other entry the library dispatches to: each tile shape with each storage order.
pub const VARIANTS: &[KernelSpec] = &[
    spec::<Wide>("hopper_v7_wide_kmn", false, true, false),
    spec::<Wide>("hopper_v7_wide_mnk", true, false, false),
    spec::<Wide>("hopper_v7_wide_mnmn", true, true, false),
    spec::<Mid>("hopper_v7_mid_kk", false, false, false),
    spec::<Mid>("hopper_v7_mid_mnk", true, false, false),
    spec::<Mid>("hopper_v7_mid_kk_cm", false, false, true),
    spec::<Square>("hopper_v7_square_kk", false, false, false),
    spec::<Square>("hopper_v7_square_kmn", false, true, false),
    spec::<Square>("hopper_v7_square_mnk", true, false, false),
    spec::<Square>("hopper_v7_square_mnmn", true, true, false),
    spec::<Slim>("hopper_v7_slim_kk", false, false, false),
    spec::<Slim>("hopper_v7_slim_kmn", false, true, false),
    spec::<Slim>("hopper_v7_slim_mnk", true, false, false),
    spec::<Slim>("hopper_v7_slim_mnmn", true, true, false),
    spec::<Lean>("hopper_v7_lean_kk", false, false, false),
    spec::<Lean>("hopper_v7_lean_kk_cm", false, false, true),
    spec::<Trim>("hopper_v7_trim_kk", false, false, false),
    spec::<Trim>("hopper_v7_trim_kk_cm", false, false, true),
    spec::<MidTrim>("hopper_v7_midtrim_kk", false, false, false),
    spec::<MidTrim>("hopper_v7_midtrim_kk_cm", false, false, true),
    spec::<WideTrim>("hopper_v7_widetrim_kk", false, false, false),
    spec::<WideTrim>("hopper_v7_widetrim_kk_cm", false, false, true),
    spec::<Thin>("hopper_v7_thin_kk", false, false, false),
    spec::<Thin>("hopper_v7_thin_kmn", false, true, false),
    spec::<Thin>("hopper_v7_thin_mnk", true, false, false),
    spec::<Thin>("hopper_v7_thin_mnmn", true, true, false),
    spec::<Narrow32>("hopper_v7_narrow32_kk_cm", false, false, true),
    spec::<Narrow16>("hopper_v7_narrow16_kk_cm", false, false, true),
    spec::<Narrow96>("hopper_v7_narrow96_kk", false, false, false),
    spec::<Narrow96>("hopper_v7_narrow96_kk_cm", false, false, true),
    spec::<Twin80>("hopper_v7_twin80_kk", false, false, false),
    spec::<Twin80>("hopper_v7_twin80_kk_cm", false, false, true),
    spec::<Twin96>("hopper_v7_twin96_kk", false, false, false),
    spec::<Twin96>("hopper_v7_twin96_kk_cm", false, false, true),
    spec::<Twin112>("hopper_v7_twin112_kk", false, false, false),
    spec::<Twin112>("hopper_v7_twin112_kk_cm", false, false, true),
];

/// One entry point per (tile, A order, B order): each passes its own tensor-map parameters.
macro_rules! entries {
    ($($name:ident: $tile:ty, $a_mn:literal, $b_mn:literal, $c:ty;)*) => {$(
        #[cfg(hopper)]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            _a: crate::args::TensorMapParam,
            _b: crate::args::TensorMapParam,
            _c: crate::args::TensorMapParam,
            _a_edge: crate::args::TensorMapParam,
            _b_edge: crate::args::TensorMapParam,
            args: crate::args::GemmArgs,
        ) {
            let maps = [
                crate::tensor_map_param!($name, 0),
                crate::tensor_map_param!($name, 1),
                crate::tensor_map_param!($name, 2),
                crate::tensor_map_param!($name, 3),
                crate::tensor_map_param!($name, 4),
            ];
            gemm::<$tile, { <$tile as Tile>::STAGES }, { <$tile as Tile>::PRODUCER_REGS }, { <$tile as Tile>::CONSUMER_REGS }, { $a_mn as u32 }, { $b_mn as u32 }, $c>(maps, &args);
        }
    )*};
}

entries! {
    hopper_v7: Wide, false, false, RowMajorC;
    hopper_v7_wide_kmn: Wide, false, true, RowMajorC;
    hopper_v7_wide_mnk: Wide, true, false, RowMajorC;
    hopper_v7_wide_mnmn: Wide, true, true, RowMajorC;
    hopper_v7_mid_kk: Mid, false, false, RowMajorC;
    hopper_v7_mid_mnk: Mid, true, false, RowMajorC;
    hopper_v7_mid_kk_cm: Mid, false, false, ColMajorC;
    hopper_v7_square_kk: Square, false, false, RowMajorC;
    hopper_v7_square_kmn: Square, false, true, RowMajorC;
    hopper_v7_square_mnk: Square, true, false, RowMajorC;
    hopper_v7_square_mnmn: Square, true, true, RowMajorC;
    hopper_v7_slim_kk: Slim, false, false, RowMajorC;
    hopper_v7_slim_kmn: Slim, false, true, RowMajorC;
    hopper_v7_slim_mnk: Slim, true, false, RowMajorC;
    hopper_v7_slim_mnmn: Slim, true, true, RowMajorC;
    hopper_v7_lean_kk: Lean, false, false, RowMajorC;
    hopper_v7_lean_kk_cm: Lean, false, false, ColMajorC;
    hopper_v7_trim_kk: Trim, false, false, RowMajorC;
    hopper_v7_trim_kk_cm: Trim, false, false, ColMajorC;
    hopper_v7_midtrim_kk: MidTrim, false, false, RowMajorC;
    hopper_v7_midtrim_kk_cm: MidTrim, false, false, ColMajorC;
    hopper_v7_widetrim_kk: WideTrim, false, false, RowMajorC;
    hopper_v7_widetrim_kk_cm: WideTrim, false, false, ColMajorC;
    hopper_v7_thin_kk: Thin, false, false, RowMajorC;
    hopper_v7_thin_kmn: Thin, false, true, RowMajorC;
    hopper_v7_thin_mnk: Thin, true, false, RowMajorC;
    hopper_v7_thin_mnmn: Thin, true, true, RowMajorC;
    hopper_v7_narrow32_kk_cm: Narrow32, false, false, ColMajorC;
    hopper_v7_narrow16_kk_cm: Narrow16, false, false, ColMajorC;
    hopper_v7_narrow96_kk: Narrow96, false, false, RowMajorC;
    hopper_v7_narrow96_kk_cm: Narrow96, false, false, ColMajorC;
    hopper_v7_twin80_kk: Twin80, false, false, RowMajorC;
    hopper_v7_twin80_kk_cm: Twin80, false, false, ColMajorC;
    hopper_v7_twin96_kk: Twin96, false, false, RowMajorC;
    hopper_v7_twin96_kk_cm: Twin96, false, false, ColMajorC;
    hopper_v7_twin112_kk: Twin112, false, false, RowMajorC;
    hopper_v7_twin112_kk_cm: Twin112, false, false, ColMajorC;
}

#[cfg(hopper)]
#[inline(always)]
/// `STAGES`, `PRODUCER_REGS` and `CONSUMER_REGS` are `T`'s, passed again because a generic's
/// associated constant cannot be a const argument (of `PipelineState`, `setmaxnreg`);
/// `TRANS_A`/`TRANS_B` are 1 for an MN-major A/B.
fn gemm<T: Tile, const STAGES: u32, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32, const TRANS_A: u32, const TRANS_B: u32, C: crate::staging::Orientation>(maps: [crate::ptx::tma::TensorMap; 5], args: &crate::args::GemmArgs) {
    use crate::epilogue::{bf16x2_to_f32, Output, Partial};
    use crate::staging::{fragment_pair_addr, holds_columns_past_tma};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::wgmma;
    use crate::ptx::{bar, cluster, cvt, fence, griddepcontrol, setmaxnreg, shfl, smem, sreg, tma};
    use crate::rendezvous::Rendezvous;
    use crate::sched::{StreamK, Workspace};
    use crate::staging::Staging;

    let [map_a, map_b, map_c, map_a_edge, map_b_edge] = maps;
    let (a_mn, b_mn, c_col) = (TRANS_A != 0, TRANS_B != 0, C::COL_MAJOR);
    let smem_plan = smem::<T>();
    let (a_box, b_box) = (a_box::<T>(a_mn), b_box::<T>(b_mn));
    let stages = STAGES;
    let base = smem::base();
    let full = |s: u32| Barrier(base + smem_plan.barrier(s));
    let empty = |s: u32| Barrier(base + smem_plan.barrier(stages + s));
    let c_load = |c: u32| Barrier(base + smem_plan.barrier(2 * stages + c));
    let tid = sreg::tid_x();
    let wg = tid / 128;

    let rank = sreg::cluster_ctarank();
    let this = spec::<T>("", a_mn, b_mn, c_col);
    let sched = this.scheduler(args.m, args.n);
    let tiles = sched.num_tiles();
    // Unit `idx` is tile `idx % tiles` of batch entry `idx / tiles`; this CTA's tile of it.
    let unit = |idx: u32| {
        let (tm, tn) = sched.tile_snaking(idx % tiles);
        let (tm, tn) = if T::ALONG_N { (tm, tn * T::CLUSTER + rank) } else { (tm * T::CLUSTER + rank, tn) };
        (tm * T::BM, tn * T::BN, (idx / tiles) as i32)
    };
    let (worker, workers) = (sreg::clusterid_x(), sreg::nclusterid_x());
    let num_kb = args.k.div_ceil(BK);
    // Without a workspace the host has forbidden splitting (and the schedule it sized the grid
    // by did not split either).
    let sk = match args.workspace {
        0 => StreamK::whole(tiles * args.batch, num_kb, workers),
        _ => StreamK { units: tiles * args.batch, num_kb, workers, dp_units: args.dp_units, share: args.share },
    };
    let ws = Workspace { partial_bytes: partial_bytes::<T>() };
    let (a_share, b_share) = (this.a_share_rows(), this.b_share_rows());
    // C's contiguous dimension: N, or M for a column-major C. TMA stores reach the last whole
    // 16-byte chunk of it, or nothing where TMA cannot write C; the rest of a row-major C's rows
    // is stored from registers.
    let tma_columns = args.tma_store_columns(if c_col { args.m } else { args.n });
    // No column of a row-major C is TMA's (a ragged C, or fewer than 8 columns): the warpgroup's
    // threads store each staged box themselves (`Output::store_box`, `Tile::THREADS_STORE`), in
    // the epilogue that scales, so that no tile is held and neither v6's epilogue nor the K loop
    // carries the copy.
    let threads_store = T::THREADS_STORE && !c_col && tma_columns == 0;

    if tid == 0 {
        // The maps are kernel parameters, not memory the previous kernel writes: fetching them
        // may overlap its end.
        for map in maps {
            tma::prefetch_tensormap(map);
        }
        for s in 0..stages {
            mbarrier::init(full(s), 1);
            mbarrier::init(empty(s), T::CONSUMERS * T::CLUSTER);
        }
        for c in 0..T::CONSUMERS {
            mbarrier::init(c_load(c), 1);
        }
        fence::mbarrier_init_release_cluster();
    }
    // Both CTAs' barriers exist before anyone multicasts or arrives remotely.
    cluster::sync();
    // Nothing global is touched before the previous kernel in the stream has finished.
    griddepcontrol::wait();

    if wg == 0 {
        setmaxnreg::dec::<PRODUCER_REGS>();
        if tid == 0 {
            let mut write = PipelineState::<STAGES>::producer();
            let mut walk = sk.walk(worker);
            // Stream-K launches keep their whole waves in step; the cluster's first producer
            // stands for it.
            let mut rendezvous = Rendezvous::new(args.workspace + ws.rendezvous(), &sk, args.workspace != 0 && rank == 0);
            let mut j = 0;
            while let Some(work) = walk.next() {
                rendezvous.wait(j);
                if walk.is_done() {
                    // This CTA's last tile: the next kernel in the stream may now be scheduled,
                    // to take each SM as this grid leaves it and run its prologue there while the
                    // last tiles finish.
                    griddepcontrol::launch_dependents();
                }
                let (m0, n0, z) = unit(work.unit);
                // What lands in this CTA's stages, as far as M and N reach: every CTA's share of
                // the operand the cluster shares, and its own rows of the other. The rows that
                // cross M or N come through the edge maps, and none past them are loaded.
                let mut stage_bytes = if T::ALONG_N { this.b_share_bytes(n0, args.n) } else { this.a_share_bytes(m0, args.m) };
                for cta in 0..T::CLUSTER {
                    stage_bytes += if T::ALONG_N { this.a_share_bytes(m0 + cta * a_share, args.m) } else { this.b_share_bytes(n0 + cta * b_share, args.n) };
                }
                // The rows this CTA loads.
                let (m, n) = if T::ALONG_N { (m0 + rank * a_share, n0) } else { (m0, n0 + rank * b_share) };
                let a_map = if !this.a_share_at_edge(m, args.m) { map_a } else { map_a_edge };
                let b_map = if !this.b_share_at_edge(n, args.n) { map_b } else { map_b_edge };
                for i in work.kb_begin..work.kb_end {
                    // The consumers count slices, not K: they do not see the order.
                    let kb = if work.k_descending { work.kb_begin + work.kb_end - 1 - i } else { i };
                    let s = write.stage;
                    let k0 = kb * BK;
                    mbarrier::wait(empty(s), write.phase);
                    mbarrier::arrive_expect_tx(full(s), stage_bytes);
                    // This CTA's share of the shared operand lands at the same offset in every CTA
                    // of the cluster.
                    let load = |dst, map, x: u32, y: u32, shared: bool| {
                        if shared && T::CLUSTER > 1 {
                            tma::load_3d_multicast(dst, map, x as i32, y as i32, z, full(s), (1u16 << T::CLUSTER) - 1);
                        } else {
                            tma::load_3d(dst, map, x as i32, y as i32, z, full(s));
                        }
                    };
                    let a_dst = base + smem_plan.a_stage(s) + if T::ALONG_N { rank * a_share * BK * 2 } else { 0 };
                    if a_mn {
                        for i in 0..T::BM / SPAN {
                            if m0 + i * SPAN < args.m {
                                load(a_dst + i * a_box.bytes(), map_a, m0 + i * SPAN, k0, T::ALONG_N);
                            }
                        }
                    } else if m < args.m {
                        load(a_dst, a_map, k0, m, T::ALONG_N);
                    }
                    let b_dst = base + smem_plan.b_stage(s) + if T::ALONG_N { 0 } else { rank * b_share * BK * 2 };
                    if b_mn {
                        for i in 0..b_share / SPAN {
                            if n + i * SPAN < args.n {
                                load(b_dst + i * b_box.bytes(), map_b, n + i * SPAN, k0, !T::ALONG_N);
                            }
                        }
                    } else if n < args.n {
                        load(b_dst, b_map, k0, n, !T::ALONG_N);
                    }
                    write.advance();
                }
                rendezvous.arrive(j);
                j += 1;
            }
            rendezvous.depart();
            // Wait until every stage has been released by both CTAs' consumers, as if to fill
            // it again: the peer's last remote arrives on this CTA's `empty` barriers have then
            // landed, and the CTA may exit (CUTLASS's `producer_tail`). This replaces a cluster
            // barrier at exit, whose release compiles to `MEMBAR.ALL.GPU` (waiting, it seems,
            // for C's stores to reach memory): a relaxed exit barrier read 2048³ 0.957 against
            // 0.927, and this tail 0.953 in the third session's final sweep.
            for _ in 0..stages {
                mbarrier::wait(empty(write.stage), write.phase);
                write.advance();
            }
        }
    } else {
        setmaxnreg::inc::<CONSUMER_REGS>();
        // `c` and each slice's stage are the same in every lane; broadcasting them from lane 0
        // tells ptxas so. It then computes the `wgmma` descriptors in uniform registers, which
        // the MMAs read directly: 31 vector instructions per K slice and warp instead of 79 (and
        // 29 uniform ones), +0.5% on the sweep (docs/performance.md).
        let c = shfl::sync_idx_b32(wg - 1, 0);
        let leader = tid.is_multiple_of(128);
        let (warp, lane) = ((tid % 128) / 32, tid % 32);
        let staging = |buf: u32| Staging(base + smem_plan.c + (2 * c + buf) * C_BOX.bytes());
        let mut acc = T::Acc::zeroed();
        let mut read = PipelineState::<STAGES>::new();
        let mut c_phase = 0;
        // Boxes staged so far, across tiles: the two buffers must alternate box after box even
        // when a tile has an odd number of boxes, since `wait_group.read 1` leaves the last store
        // running.
        let mut boxes = 0u32;
        // `Tile::HOLD`: the finished tile waiting to be staged, its place (m0, n0, z), and how
        // many of its boxes are still to go (none yet).
        // (The zeroed accumulator packed, not `Held::none()`: that one moved ptxas's register
        // allocation of the whole wide kernel and read 0.4–0.8% lower at 4096³, two rounds.)
        let mut held = <T::Held as Held<T::Acc>>::pack(&acc);
        let mut held_at = (0u32, 0u32, 0i32);
        let mut pending = 0u32;
        // The next staging buffer, once the store issued from it two boxes ago has read it and
        // the whole warpgroup knows.
        let next_staging = |boxes: &mut u32| {
            let buf = staging(*boxes % 2);
            *boxes += 1;
            if leader {
                tma::wait_group_read::<1>();
            }
            bar::sync(1 + c, 128);
            buf
        };
        // Store the staged box whose first column is the tile's column `first`, of the tile at
        // (m0, n0, z), through TMA once every thread's writes are visible to it.
        let tma_store_staged = |buf: Staging, first: u32, (m0, n0, z): (u32, u32, i32)| {
            fence::proxy_async_shared_cta();
            bar::sync(1 + c, 128);
            // The box's place in C's map: x along C's contiguous dimension.
            let (x, y) = if c_col { (m0 + 64 * c, n0 + first) } else { (n0 + first, m0 + 64 * c) };
            if leader {
                if x < tma_columns {
                    tma::store_3d(map_c, x as i32, y as i32, z, buf.0);
                }
                // One group per box, empty for a box past C's last whole chunk: the
                // `wait_group.read 1` above counts on groups alternating between buffers.
                tma::commit_group();
            }
        };
        // The same, by the warpgroup's threads where TMA writes none of C, for the epilogue that
        // scales (no tile is held then, and neither v6's epilogue nor the K loop has this code).
        let store_staged = |buf: Staging, first: u32, (m0, n0, z): (u32, u32, i32)| {
            if threads_store {
                bar::sync(1 + c, 128);
                let width = (T::BN - first).min(C_BOX.inner);
                Output::new(args, z as u32).store_box(buf, warp, lane, m0 + 64 * c, n0 + first, width);
            } else {
                tma_store_staged(buf, first, (m0, n0, z));
            }
        };
        // Stage the held tile's next box and store it (v6's epilogue, one box).
        let stage_held = |held: &T::Held, at: (u32, u32, i32), pending: &mut u32, boxes: &mut u32| {
            let j = T::BN / C_BOX.inner - *pending;
            *pending -= 1;
            let buf = next_staging(boxes);
            if C::COL_MAJOR {
                held.for_each_in_box(j, |i, pair| C::store_pair(buf, 16 * warp + lane / 4 + 8 * (i % 2), 8 * (i / 2) + 2 * (lane % 4), pair));
            } else {
                held.for_each_in_box(j, |i, pair| smem::st_b32(fragment_pair_addr(buf.0, warp, lane, i), pair));
            }
            tma_store_staged(buf, j * C_BOX.inner, at);
        };
        // This warpgroup's partial-sum slot for worker `w` (this CTA's rank in its cluster), at
        // this thread's place in it (see `Fragment::st_global_pairs`). Always called with a
        // value that changes per piece: an address computed once, before the tile loop, would
        // stay live through the mainloop next to the accumulator.
        let partial = |w: u32| {
            let cta = w * T::CLUSTER + rank;
            let sums = ws.partial(cta) + (c * partial_bytes::<T>() / T::CONSUMERS + 8 * (tid % 128)) as u64;
            Partial { sums: args.workspace + sums, flag: args.workspace + ws.flag(cta, c) }
        };
        for work in sk.walk(worker) {
            let (m0, n0, z) = unit(work.unit);
            for kb in work.kb_begin..work.kb_end {
                // The wait takes the stage as it is, so that it does not wait for the shuffle.
                let s = shfl::sync_idx_b32(read.stage, 0);
                mbarrier::wait(full(read.stage), read.phase);

                wgmma::fence();
                let (a_stage, b_stage) = (base + smem_plan.a_stage(s), base + smem_plan.b_stage(s));
                for k in 0..BK / 16 {
                    let a = if a_mn {
                        SmemDesc::mn_major_128b(a_stage + c * a_box.bytes() + 2048 * k, a_box.bytes())
                    } else {
                        SmemDesc::k_major_128b(a_stage + c * 64 * 128).advance(32 * k)
                    };
                    let b = if b_mn {
                        SmemDesc::mn_major_128b(b_stage + 2048 * k, b_box.bytes())
                    } else {
                        SmemDesc::k_major_128b(b_stage).advance(32 * k)
                    };
                    acc.mma_async::<TRANS_A, TRANS_B>(a, b, (kb != work.kb_begin || k != 0) as u32);
                }
                wgmma::commit_group();
                // The previous slice's MMAs have retired: its stage may be refilled. (Its stage is
                // derived from `s`, not carried over from the last pass, so that it is uniform too
                // and so are the addresses of the releases.)
                let prev = PipelineState::<STAGES>::stage_before(s);
                acc.wait_group::<1>();
                for cta in 0..T::CLUSTER {
                    mbarrier::arrive_cluster_if(empty(prev), cta, leader && kb > work.kb_begin);
                }
                read.advance();
                if T::HOLD && pending > 0 {
                    // The previous tile's next box, while this slice's MMAs run.
                    stage_held(&held, held_at, &mut pending, &mut boxes);
                }
            }
            // Boxes of the held tile that this piece was too short to stage: from here to the
            // next pack the held registers are dead.
            while T::HOLD && pending > 0 {
                stage_held(&held, held_at, &mut pending, &mut boxes);
            }
            acc.wait_group::<0>();
            let last = PipelineState::<STAGES>::stage_before(read.stage);
            // K = 0 (C = beta·C) consumed no slice, so it releases none: a release here would be
            // a phase of an `empty` barrier that no load matches, which the producer's tail could
            // wait on for ever, or which could land after the peer CTA has exited.
            for cta in 0..T::CLUSTER {
                mbarrier::arrive_cluster_if(empty(last), cta, leader && work.kb_end > work.kb_begin);
            }

            if !work.finishes {
                // Stream-K: the rest of this tile's K blocks belong to the next worker(s); leave
                // the sum for the one that finishes it (`wait_from` is this worker here).
                let slot = partial(work.wait_from);
                acc.st_global_pairs(slot.sums);
                bar::sync(1 + c, 128);
                if leader {
                    slot.publish();
                }
                acc = T::Acc::zeroed();
                continue;
            }
            // The earlier K blocks' sums, in worker order (the result does not depend on timing).
            for from in work.wait_from..worker {
                let slot = partial(from);
                if leader {
                    slot.wait();
                }
                bar::sync(1 + c, 128);
                acc.add_ld_global_cg_pairs(slot.sums);
                if leader {
                    slot.clear();
                }
            }

            if args.alpha == 1.0 && args.beta == 0.0 && !threads_store {
                // The common call: v6's epilogue. A loop over the four boxes with a filter on the
                // pairs measured 1.4% faster overall than the straight-line pass below (whose
                // code is 2.4 times larger); with alpha and beta in it, though, it spills. It stages
                // the boxes that are not held: none of the wide tile's.
                let held_boxes = <T::Held as Held<T::Acc>>::BOXES;
                let shifted_boxes = const { crate::staging::shifts_last_box(T::BN) as u32 };
                for j in 0..T::BN.div_ceil(C_BOX.inner) - held_boxes - shifted_boxes {
                    let buf = next_staging(&mut boxes);
                    acc.for_each_pair(|p, lo, hi| {
                        let col = 8 * (p / 2) + 2 * (lane % 4);
                        if col / C_BOX.inner == j {
                            C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col % C_BOX.inner, cvt::rn_bf16x2_f32(lo, hi));
                        }
                    });
                    tma_store_staged(buf, j * C_BOX.inner, (m0, n0, z));
                }
                if shifted_boxes > 0 {
                    let buf = next_staging(&mut boxes);
                    stage_shifted_last_box::<T, C>(&acc, buf, warp, lane);
                    tma_store_staged(buf, T::BN - C_BOX.inner, (m0, n0, z));
                }
                if T::HOLD {
                    // The rest waits for the next piece's first slices (the wide tile: the whole
                    // tile; below the edge columns, which are stored from `acc`).
                    held = <T::Held as Held<T::Acc>>::pack(&acc);
                    held_at = (m0, n0, z);
                    pending = held_boxes;
                }
            } else {
                // One pass over the register pairs in column order; the 16 pairs of each 64-column
                // box are contiguous, so a box starts at pair 16j and ends at pair 16j + 15 —
                // constants once unrolled, which keeps the pass straight-line and lets each pair's
                // registers die as soon as it is staged.
                let (row0, scale_c) = (m0 + 64 * c, args.beta != 0.0);
                let pairs_per_box = C_BOX.inner / 4;
                acc.for_each_pair(|p, lo, hi| {
                    let j = p / pairs_per_box;
                    let buf = staging((boxes + j) % 2);
                    // The box's place in C's map: x along C's contiguous dimension.
                    let x = if c_col { row0 } else { n0 + j * C_BOX.inner } as i32;
                    if p % pairs_per_box == 0 {
                        if leader {
                            // The store issued from this buffer two boxes ago has read it.
                            tma::wait_group_read::<1>();
                        }
                        if scale_c && x < tma_columns as i32 {
                            if leader {
                                mbarrier::arrive_expect_tx(c_load(c), C_BOX.bytes());
                                let y = if c_col { n0 + j * C_BOX.inner } else { row0 } as i32;
                                tma::load_3d(buf.0, map_c, x, y, z, c_load(c));
                            }
                            mbarrier::wait(c_load(c), c_phase);
                            c_phase ^= 1;
                        } else {
                            bar::sync(1 + c, 128);
                            if scale_c && threads_store {
                                Output::new(args, z as u32).load_box(buf, warp, lane, row0, x as u32);
                                bar::sync(1 + c, 128);
                            }
                        }
                    }
                    let row = 16 * warp + lane / 4 + 8 * (p % 2);
                    let col = (8 * (p / 2) + 2 * (lane % 4)) % C_BOX.inner;
                    let (mut lo, mut hi) = (args.alpha * lo, args.alpha * hi);
                    if T::HOLD && !c_col {
                        // With a held tile in registers, addresses LLVM would hoist out of the
                        // tile loop do not fit beside it (`fragment_pair_addr`).
                        let at = fragment_pair_addr(buf.0, warp, lane, p % pairs_per_box);
                        if scale_c {
                            let (old_lo, old_hi) = bf16x2_to_f32(smem::ld_b32(at));
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        smem::st_b32(at, cvt::rn_bf16x2_f32(lo, hi));
                    } else {
                        if scale_c {
                            let (old_lo, old_hi) = bf16x2_to_f32(C::load_pair(buf, row, col));
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        C::store_pair(buf, row, col, cvt::rn_bf16x2_f32(lo, hi));
                    }
                    // The box's last pair, or the fragment's (a trimmed tile's last box is not
                    // shifted here, but part full: such a tile takes one column of tiles with
                    // alpha and beta, `KernelSpec::shifted_last_box`).
                    if p % pairs_per_box == pairs_per_box - 1 || p == T::BN / 4 - 1 {
                        store_staged(buf, j * C_BOX.inner, (m0, n0, z));
                    }
                });
                boxes += T::BN.div_ceil(C_BOX.inner);
                held = <T::Held as Held<T::Acc>>::none();
            }
            if !threads_store && holds_columns_past_tma(n0, T::BN, args.n, tma_columns) && !c_col {
                // Columns past the last whole 16-byte chunk of C's rows: the clipped TMA stores
                // above left them out; store them (with their old values, for beta) directly.
                // (Entries that write C column-major take only calls whose C TMA writes whole;
                // where TMA writes none of C, this is every column, unless the threads stored
                // every box above.) Only a tile that holds such columns runs this pass, never one
                // that merely reaches past N.
                let out = Output::new(args, z as u32);
                acc.for_each_pair(|p, lo, hi| {
                    let (row, col) = (m0 + 64 * c + 16 * warp + lane / 4 + 8 * (p % 2), n0 + 8 * (p / 2) + 2 * (lane % 4));
                    if col >= tma_columns {
                        let (mut lo, mut hi) = (args.alpha * lo, args.alpha * hi);
                        if args.beta != 0.0 {
                            let (old_lo, old_hi) = out.load_pair(row, col);
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        out.store_pair(row, col, lo, hi);
                    }
                });
            }
            // The next tile's first MMA ignores the accumulator; fresh values let the old ones die.
            acc = T::Acc::zeroed();
        }
        while T::HOLD && pending > 0 {
            stage_held(&held, held_at, &mut pending, &mut boxes);
        }
        if leader {
            // Shared memory must outlive the stores still reading it.
            tma::wait_group_read::<0>();
        }
    }
}
