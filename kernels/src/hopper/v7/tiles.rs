//! The tile shapes v7 runs, each a type named by its shape (rows × columns of C per CTA). The
//! entry names keep their short names (`wide`, `lean`, `twin80`…), given here beside each type.
//! The host picks among them by the waves each needs (`auto`, docs/shapes.md).

#[cfg(hopper)]
use super::held::Held;
#[cfg(hopper)]
use crate::ptx::wgmma::Fragment;

/// A CTA tile shape: `BM` × `BN` with each consumer warpgroup holding `BLOCKS` blocks of
/// 64 × `BN`.
pub trait Tile {
    /// Consumer warpgroups; each holds `BLOCKS` × 64 rows of the tile.
    const CONSUMERS: u32;
    /// 64-row blocks per consumer, each its own accumulator and `wgmma` per K step. Two make a
    /// tile 256 long with two consumers: four consumers of one block would need more registers
    /// than 640 threads are given (docs/performance.md, "Warp specialisation and registers").
    const BLOCKS: u32 = 1;
    const BM: u32 = 64 * Self::CONSUMERS * Self::BLOCKS;
    const BN: u32;
    /// CTAs per cluster, stacked along M; they split B and multicast it (unless `ALONG_N`).
    const CLUSTER: u32;
    /// The cluster's CTAs sit side by side along N instead, and split A and multicast it.
    const ALONG_N: bool = false;
    const STAGES: u32;
    /// Each consumer's 64 × `BN` accumulator (one per block); its `wgmma` is the tile's MMA.
    #[cfg(hopper)]
    type Acc: Fragment;
    /// A finished tile waits in registers as packed bf16 (`Tile::Held`) and is staged box by
    /// box during the next unit's first K slices, while its MMAs run, instead of between the two.
    const HOLD: bool = false;
    /// `setmaxnreg` of the producer and of the consumers: their sum over the CTA's threads is the
    /// register file (384 threads × 168, or 512 × 128 with three consumers); a held tile needs
    /// the consumers' 240.
    const PRODUCER_REGS: u32 = 40;
    const CONSUMER_REGS: u32 = 232;
    /// Registers a consumer has beside its accumulators (64 × `BN` f32 a block over 128
    /// threads): under 100, the epilogue works the thread's place out anew where it needs it
    /// rather than holding what derives from it through the K loop (`epilogue.rs`).
    const SPARE_REGS: u32 = Self::CONSUMER_REGS - Self::BLOCKS * Self::BN / 2;
    /// Fewer than 100 [`SPARE_REGS`](Self::SPARE_REGS): the epilogue re-reads the thread's place.
    const FEW_SPARE_REGS: bool = Self::SPARE_REGS < 100;
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

/// `wide`: v6's tile in clusters of two stacked along M, which share B. Holds its finished tile
/// in registers while the next one's first MMAs run.
pub struct Tile128x256;
/// `mid`, 4 stages: outputs that 192 columns cover in fewer waves than 256. K-major B only: each
/// CTA's 96 rows of B are not whole 64-wide boxes of an N-major B.
pub struct Tile128x192;
/// `square`, 6 stages: outputs with too few 128×256 tiles to fill the SMs.
pub struct Tile128x128;
/// `slim`, one consumer, 8 stages: outputs smaller still (M of 128 or 256). Its m64n128 MMAs
/// read fewer shared-memory bytes per FLOP than two m64n64 would.
pub struct Tile64x128;
/// `lean`, one consumer, 6 stages: outputs 129 to 192 wide, or, written column-major (`_cm`, the
/// operands' places traded), 129 to 192 tall. K-major A and B only, as [`Tile128x192`].
pub struct Tile64x192;
/// `trim`, one consumer, 6 stages: [`Tile64x192`] trimmed to 160 columns, for outputs 129 to 160
/// wide (or tall). v6's epilogue moves its last staging box back to end with the tile
/// (`staging::shifts_last_box`), so that tiles may sit side by side; with beta, or alpha and
/// nothing fused, the entry takes one column of tiles
/// ([`crate::spec::KernelSpec::takes_one_column`]).
pub struct Tile64x160;
/// `midtrim`, 4 stages: [`Tile128x192`] trimmed to 160 columns, as [`Tile64x160`] is the lean
/// tile, for outputs too long for pairs of those to fit one wave.
pub struct Tile128x160;
/// `widetrim`, 4 stages: [`Tile128x256`] trimmed to 224 columns, for outputs 193 to 224 wide (or
/// tall), side by side like [`Tile64x160`].
pub struct Tile128x224;
/// `thin`, one consumer, no cluster, 12 stages: for M ≤ 64, where one row of tiles covers C and
/// the call is bound by reading B (a pair's second CTA would compute only rows past M), and for
/// N ≤ 64.
pub struct Tile64x64;
/// `narrow32`, one consumer, 16 stages, written column-major only (`_cm`): for M from 17 to 32.
/// Handed the call as Cᵀ = B·Aᵀ, each CTA streams 64 rows of B, the pair shares A's rows, and
/// the m64n32 MMA computes 32 rows of C where [`Tile64x64`] computes 64 (the design of cuBLAS's
/// small-M kernels). One column of tiles only.
pub struct Tile64x32;
/// `narrow16`: [`Tile64x32`] 16 columns wide (m64n16), for M ≤ 16.
pub struct Tile64x16;
/// `narrow96`, one consumer, 10 stages: for M or N from 65 to 96, which 64×128 pairs cover with
/// up to 63 columns to spare; column-major (`_cm`) for a small M, plain for a small N.
pub struct Tile64x96;
/// `twin80`, 7 stages, in pairs side by side along N ([`Tile::ALONG_N`]) that share A's rows:
/// for N of 129–160 at large M, where A is the operand read from DRAM and B stays in L2
/// (cuBLAS's `nvjet_sm90_tst_80x128_64x8_2x1` at 8192×160×8192).
pub struct Tile128x80;
/// `tall`, 4 stages, two consumers of two blocks each: 256 × 128, in pairs along M that share
/// B. Written column-major (`_cm`), its 256 rows lie along the call's N, so that a few hundred
/// rows of M take half as many tiles along N as the 128-long tiles do (cuBLAS's 256-long tiles
/// on such calls, docs/shapes.md).
pub struct Tile256x128;
/// `tall144`, 3 stages (four do not fit beside the staging): [`Tile256x128`] 144 wide, for a
/// short side that 144 divides with less padding (cuBLAS's 256×144 at 836×15360×5120). Its
/// epilogue re-reads the thread's place per box (`Tile::SPARE_REGS`), or it spills.
pub struct Tile256x144;
/// `tall160`, 3 stages: [`Tile256x128`] 160 wide, as [`Tile256x144`]; column-major only, the
/// form of the calls it fits (a few hundred to two thousand rows of M).
pub struct Tile256x160;
/// `long128`, 4 stages, three consumers of one block each: 192 × 128, in pairs along M that
/// share B. Written column-major (`_cm`), its 192 rows lie along the call's N and its width
/// along M, so that a few hundred to two thousand rows of M take few columns of tiles with
/// little padding, in a count that fills the SMs' waves (cuBLAS's 192-long tiles on such
/// calls, docs/shapes.md). Three consumers leave each 160 registers (`setmaxnreg`: 128 × 24 +
/// 384 × 160 of the 64 Ki), room for accumulators up to 176 wide.
pub struct Tile192x128;
/// `long144`, 4 stages: [`Tile192x128`] 144 wide.
pub struct Tile192x144;
/// `long160`, 4 stages: [`Tile192x128`] 160 wide, column-major only (row-major, its epilogue
/// spills at 160 registers).
pub struct Tile192x160;
/// `long176`, 3 stages (four do not fit beside the staging): [`Tile192x128`] 176 wide,
/// column-major only, as [`Tile192x160`].
pub struct Tile192x176;
/// `twin96`, 6 stages: [`Tile128x80`] 96 wide, for N of 161–192.
pub struct Tile128x96;
/// `twin112`, 6 stages: [`Tile128x80`] 112 wide, for N of 193–224.
pub struct Tile128x112;

impl Tile for Tile128x256 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 256;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 128];
    const HOLD: bool = true;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 240;
    // Beside the hang guard's bounded waits the copy doubled the diagnostic build's spills; that
    // build stores a ragged C pair by pair.
    const THREADS_STORE: bool = !cfg!(hang_guard);
    #[cfg(hopper)]
    type Held = [u32; 64];
}

impl Tile for Tile128x192 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 192;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 96];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile128x128 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x128 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 8;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x192 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 192;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 96];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x160 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 6;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile128x160 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile128x224 {
    const CONSUMERS: u32 = 2;
    const BN: u32 = 224;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    // [`Tile128x256`]'s split: with 232 its consumers spilled once the epilogue could move its
    // last box back.
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 240;
    // Staging boxes for its threads to store spilled wherever the copy stood.
    const THREADS_STORE: bool = false;
    #[cfg(hopper)]
    type Acc = [f32; 112];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x64 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 64;
    const CLUSTER: u32 = 1;
    const STAGES: u32 = 12;
    /// These tiles stream B from DRAM, each its own columns, so a wave shares nothing in L2 that
    /// keeping it in step would save; spread evenly, every SM streams as many K blocks.
    const SPREAD: bool = true;
    #[cfg(hopper)]
    type Acc = [f32; 32];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x32 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 32;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 16;
    /// Each pair streams its own rows of B, as [`Tile64x64`] does.
    const SPREAD: bool = true;
    #[cfg(hopper)]
    type Acc = [f32; 16];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile64x16 {
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

impl Tile for Tile64x96 {
    const CONSUMERS: u32 = 1;
    const BN: u32 = 96;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 10;
    #[cfg(hopper)]
    type Acc = [f32; 48];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile128x80 {
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

impl Tile for Tile128x96 {
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

impl Tile for Tile128x112 {
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

impl Tile for Tile256x128 {
    const CONSUMERS: u32 = 2;
    const BLOCKS: u32 = 2;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile256x144 {
    const CONSUMERS: u32 = 2;
    const BLOCKS: u32 = 2;
    const BN: u32 = 144;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 3;
    #[cfg(hopper)]
    type Acc = [f32; 72];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile256x160 {
    const CONSUMERS: u32 = 2;
    const BLOCKS: u32 = 2;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 3;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile192x128 {
    const CONSUMERS: u32 = 3;
    const BN: u32 = 128;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 160;
    #[cfg(hopper)]
    type Acc = [f32; 64];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile192x144 {
    const CONSUMERS: u32 = 3;
    const BN: u32 = 144;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 160;
    #[cfg(hopper)]
    type Acc = [f32; 72];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile192x160 {
    const CONSUMERS: u32 = 3;
    const BN: u32 = 160;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 4;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 160;
    #[cfg(hopper)]
    type Acc = [f32; 80];
    #[cfg(hopper)]
    type Held = ();
}

impl Tile for Tile192x176 {
    const CONSUMERS: u32 = 3;
    const BN: u32 = 176;
    const CLUSTER: u32 = 2;
    const STAGES: u32 = 3;
    const PRODUCER_REGS: u32 = 24;
    const CONSUMER_REGS: u32 = 160;
    #[cfg(hopper)]
    type Acc = [f32; 88];
    #[cfg(hopper)]
    type Held = ();
}
