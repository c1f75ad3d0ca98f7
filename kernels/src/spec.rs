//! What the host needs to launch a kernel, declared once beside the kernel itself.
//!
//! Every version file exports a `SPEC: KernelSpec`. The kernel reads the same constants the spec
//! is built from; the host builds tensor maps, grids, clusters and shared-memory sizes from the
//! spec; the PTX build (`tools/ptxgen`) writes each entry's thread count into the PTX (`.maxntid`). Nothing is
//! typed twice.

/// The architecture a kernel is written for, and the PTX target it is compiled to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// sm_90a: `wgmma`, accumulators in registers (H100, H200).
    Hopper,
    /// sm_100 family: `tcgen05`, accumulators in tensor memory (B200 is 10.0, GB300 is 10.3).
    Blackwell,
}

impl Family {
    /// Every family, each compiled to its own PTX module.
    pub const ALL: [Family; 2] = [Family::Hopper, Family::Blackwell];

    /// The `-C target-cpu` the PTX is compiled for, and the PTX file's name.
    pub const fn ptx_target(self) -> &'static str {
        match self {
            Family::Hopper => "sm_90a",
            Family::Blackwell => "sm_100f",
        }
    }

    /// The `-C target-feature` that sets the PTX ISA version: tcgen05 needs PTX ISA 8.6 or later
    /// and the family target sm_100f 8.8.
    pub const fn ptx_isa(self) -> &'static str {
        match self {
            Family::Hopper => "+ptx80",
            Family::Blackwell => "+ptx88",
        }
    }

    /// The SASS targets the family's PTX is assembled for (the cubins `hgemm` embeds beside the
    /// PTX): sm_100f PTX serves B200 (sm_100a) and GB300 (sm_103a) alike.
    pub const fn sass_archs(self) -> &'static [&'static str] {
        match self {
            Family::Hopper => &["sm_90a"],
            Family::Blackwell => &["sm_100a", "sm_103a"],
        }
    }

    /// The family whose PTX a device of compute capability `major.minor` can run, if any.
    /// sm_90a code runs only on 9.0; sm_100f code runs on 10.x (family-specific features).
    pub const fn for_compute_capability(major: u32, minor: u32) -> Option<Family> {
        match (major, minor) {
            (9, 0) => Some(Family::Hopper),
            (10, _) => Some(Family::Blackwell),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Family::Hopper => "hopper",
            Family::Blackwell => "blackwell",
        }
    }
}

/// Shared-memory swizzle of a TMA box; the MMA descriptor must name the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Rows land contiguously, 16 bytes each for a K-major 8-element box.
    None,
    /// 128-byte rows, the 16-byte chunks of row `r` XOR-permuted by `r % 8`.
    B128,
}

/// How far the L2 cache widens each TMA request (`CUtensorMapL2promotion`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Promotion {
    None,
    B128,
    B256,
}

/// A box copied by one TMA instruction: `inner` elements along the contiguous dimension times
/// `outer` rows, bf16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaBox {
    pub inner: u32,
    pub outer: u32,
    pub swizzle: Swizzle,
    pub l2_promotion: L2Promotion,
}

impl TmaBox {
    pub const fn new(inner: u32, outer: u32, swizzle: Swizzle) -> Self {
        TmaBox { inner, outer, swizzle, l2_promotion: L2Promotion::None }
    }

    /// The same box, its loads widened in L2 to `p`.
    pub const fn promote_l2(self, p: L2Promotion) -> Self {
        TmaBox { l2_promotion: p, ..self }
    }

    pub const fn bytes(self) -> u32 {
        self.inner * self.outer * 2
    }
}

/// Which dimension of an operand is contiguous in memory. A (M×K) and B (N×K) are K-major in the
/// native problem C = A·Bᵀ with both row-major; a column-major A is M-major, a row-major K×N B
/// (C = A·B) is N-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Major {
    K,
    MN,
}

/// How the launch grid is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grid {
    /// One CTA per output tile (rounded up to whole clusters).
    PerTile,
    /// As many CTAs as SMs (whole clusters), each looping over tiles.
    Persistent,
}

/// Everything about a kernel that the host launch depends on.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec {
    /// PTX entry name.
    pub name: &'static str,
    pub family: Family,
    pub version: u32,
    /// The optimization this version adds over the previous one, in a few words.
    pub adds: &'static str,
    /// Output tile of one CTA (rows of C, columns of C).
    pub tile_m: u32,
    pub tile_n: u32,
    /// Tile schedule: `tile_m`-row tiles are grouped `group_m` at a time (see [`crate::sched`]).
    pub group_m: u32,
    pub threads: u32,
    /// CTAs per cluster, along x.
    pub cluster: u32,
    /// Where a cluster's CTAs sit in the output: stacked along M, sharing B's rows (each loads
    /// `tile_n / cluster` of them and multicasts them), or, where this is set, side by side
    /// along N, sharing A's rows the same way, each loading its own `tile_n` rows of B.
    pub cluster_along_n: bool,
    pub grid: Grid,
    /// Dynamic shared memory, bytes.
    pub smem_bytes: u32,
    /// Boxes of the A (M×K), B (N×K) and, for TMA-store epilogues, C (M×N) tensor maps.
    pub a_box: TmaBox,
    pub b_box: TmaBox,
    pub c_box: Option<TmaBox>,
    /// Storage order of A and B this entry reads.
    pub a_major: Major,
    pub b_major: Major,
    /// Takes the general call: rank-3 tensor maps with the batch as the outer dimension, and
    /// `alpha`, `beta` applied in the epilogue. The ladder's v0–v6 take C = A·Bᵀ only.
    pub general: bool,
    /// Takes two more tensor maps, of A and of B, whose boxes end at M and N (see
    /// [`KernelSpec::a_edge_box`]): a CTA whose rows (share of B's rows) cross the end of a
    /// K-major A (B) loads through them, one whose rows lie wholly past it loads nothing, and
    /// every CTA expects the bytes [`KernelSpec::a_share_bytes`] and [`KernelSpec::b_share_bytes`] count.
    pub edge_maps: bool,
    /// Writes C column-major: for a row-major C the host hands it the same call with the
    /// operands' places traded (Cᵀ = B·Aᵀ), so that M is the tile's columns, the side a `wgmma`
    /// may make as narrow as 8; the kernel writes each staging box transposed.
    pub c_col_major: bool,
    /// For kernels that may split a tile's K blocks across workers ([`crate::sched::StreamK`]):
    /// their K-block depth and partial-tile size. `None`: every tile is computed whole.
    pub stream_k: Option<StreamKSpec>,
    /// Waits (`griddepcontrol.wait`) before its first access to global memory, so the host may
    /// launch it with programmatic stream serialization: scheduled, and through its prologue,
    /// while the previous kernel in the stream finishes.
    pub dependent_launch: bool,
    /// Keeps its finished tile in registers and stores it while the next tile's first MMAs run,
    /// so that its tensor cores do not wait for the epilogue between tiles (Hopper v7's wide
    /// tile); `auto` then counts no epilogue time for it.
    pub holds_tile: bool,
}

/// What the host needs of a stream-K kernel: its schedule is [`KernelSpec::schedule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamKSpec {
    /// K elements per K block.
    pub block_k: u32,
    /// Bytes of one CTA's partial tile (f32), its slot in the workspace.
    pub partial_bytes: u32,
    /// Whether the schedule splits every unit ([`crate::sched::StreamK::spread`]) instead of
    /// keeping whole waves ([`crate::sched::StreamK::new`]).
    pub spread: bool,
}

impl KernelSpec {
    /// The tile schedule of an `m × n` output. A cluster of `cluster` CTAs takes `cluster`
    /// tiles as one unit ([`unit_m`](Self::unit_m) × [`unit_n`](Self::unit_n)); the kernel and
    /// the host grid sizing both call this.
    pub const fn scheduler(&self, m: u32, n: u32) -> crate::sched::TileScheduler {
        crate::sched::TileScheduler::new(m, n, self.unit_m(), self.unit_n(), self.group_m)
    }

    /// Rows of C a cluster computes: its tiles stacked along M, or one tile's.
    pub const fn unit_m(&self) -> u32 {
        if self.cluster_along_n { self.tile_m } else { self.tile_m * self.cluster }
    }

    /// Columns of C a cluster computes.
    pub const fn unit_n(&self) -> u32 {
        if self.cluster_along_n { self.tile_n * self.cluster } else { self.tile_n }
    }

    /// Rows of A each CTA of a cluster loads per K slice ([`share_rows`]): A is shared where
    /// the cluster lies along N.
    pub const fn a_share_rows(&self) -> u32 {
        share_rows(self.tile_m, self.cluster, self.cluster_along_n)
    }

    /// Rows of B each CTA loads per K slice ([`share_rows`]): B is shared where the cluster lies
    /// along M.
    pub const fn b_share_rows(&self) -> u32 {
        share_rows(self.tile_n, self.cluster, !self.cluster_along_n)
    }

    /// Whether the epilogue's last staging box reaches past the tile's columns: a tile narrower
    /// than a box ([`crate::staging::BOX_COLS`]), whose store would overwrite the first columns of
    /// the next tile along N, so the entry takes only calls that one column of tiles covers,
    /// where TMA clips the box at C's edge.
    pub const fn single_tile_column(&self) -> bool {
        self.c_box.is_some() && self.tile_n < crate::staging::BOX_COLS
    }

    /// Whether the entry writes any C, also one that TMA cannot address
    /// ([`crate::staging::tma_can_write`]): Hopper v7's entries that write C row-major store it
    /// with their threads then, as do Blackwell's library entries. The others write C through TMA,
    /// and an entry that writes C column-major stores only whole chunks of it.
    pub const fn stores_any_c(&self) -> bool {
        self.general && !self.c_col_major
    }

    /// Whether the tile is wider than a staging box but not a multiple of it (160, 224, 96
    /// columns): v6's epilogue (alpha = 1, beta = 0, or alpha folded into a fused epilogue's
    /// pass) shifts its last box back to end with the tile ([`crate::staging::shifts_last_box`]),
    /// so those calls may take several columns of tiles, as may gated calls with beta = 0, whose
    /// threads store exactly their outputs; the epilogue that scales by alpha and beta does not,
    /// and those take one.
    pub const fn shifted_last_box(&self) -> bool {
        self.c_box.is_some() && crate::staging::shifts_last_box(self.tile_n)
    }

    /// Whether the entry takes only calls that one column of tiles covers, for calls whose tiles
    /// may sit side by side (`side_by_side`: beta = 0 and alpha = 1 or a fused epilogue, the
    /// host's `GemmOp::side_by_side_epilogue`) or not (the epilogue that scales).
    pub const fn takes_one_column(&self, side_by_side: bool) -> bool {
        self.single_tile_column() || (self.shifted_last_box() && !side_by_side)
    }

    /// The box of A's edge map for an `m`-row problem: the rows of A's last share of a tile row
    /// ([`a_share_rows`](Self::a_share_rows)) that lie before `m`, rounded up to 8, for a
    /// K-major A whose last tile row is partial; otherwise the
    /// whole box (a valid map that no CTA needs). TMA fills the rows of a box past the tensor's
    /// end with zeros, and on the H200 that costs more than loading them: square pairs ran
    /// 160×8192×8192 in 72 µs, 256×8192×8192 in 59 µs, with the same grid. The tile's rows past
    /// the box keep whatever shared memory held; they feed only rows of C past M, never stored.
    pub const fn a_edge_box(&self, m: u32) -> TmaBox {
        Self::edge(self.a_box, self.a_major, m)
    }

    /// The box of B's edge map for an `n`-column problem, as [`a_edge_box`](Self::a_edge_box)
    /// for A: the part before `n` of the last share of B's rows that a cluster's CTAs load.
    pub const fn b_edge_box(&self, n: u32) -> TmaBox {
        Self::edge(self.b_box, self.b_major, n)
    }

    const fn edge(whole: TmaBox, major: Major, end: u32) -> TmaBox {
        let rows = (end % whole.outer).next_multiple_of(8);
        if matches!(major, Major::K) && rows > 0 && rows < whole.outer {
            TmaBox { outer: rows, ..whole }
        } else {
            whole
        }
    }

    /// Bytes of the share of A's rows that starts at `m0` ([`a_share_rows`](Self::a_share_rows))
    /// per K slice of an `m`-row problem, for a kernel with edge maps: the whole box, the edge
    /// box, or nothing past M. An M-major A arrives in boxes `a_box.inner` rows of M wide; those
    /// that start past M are not loaded.
    pub const fn a_share_bytes(&self, m0: u32, m: u32) -> u32 {
        Self::share_bytes(self.a_box, self.a_major, self.a_share_rows(), m0, m)
    }

    /// Bytes of the share of B's rows that starts at `n0` ([`b_share_rows`](Self::b_share_rows)),
    /// as [`a_share_bytes`](Self::a_share_bytes) for A.
    pub const fn b_share_bytes(&self, n0: u32, n: u32) -> u32 {
        Self::share_bytes(self.b_box, self.b_major, self.b_share_rows(), n0, n)
    }

    /// Whether the share of A's rows that starts at `m0` is loaded through the edge map (a
    /// K-major A): it crosses `m`.
    pub const fn a_share_at_edge(&self, m0: u32, m: u32) -> bool {
        Self::crosses(self.a_share_rows(), m0, m)
    }

    /// Whether the share of B's rows that starts at `n0` is loaded through the edge map.
    pub const fn b_share_at_edge(&self, n0: u32, n: u32) -> bool {
        Self::crosses(self.b_share_rows(), n0, n)
    }

    const fn crosses(rows: u32, start: u32, end: u32) -> bool {
        start + rows > end
    }

    const fn share_bytes(whole: TmaBox, major: Major, rows: u32, start: u32, end: u32) -> u32 {
        if start >= end {
            0
        } else if matches!(major, Major::MN) {
            let boxes = (end - start).div_ceil(whole.inner);
            let all = rows / whole.inner;
            (if boxes < all { boxes } else { all }) * whole.bytes()
        } else if !Self::crosses(rows, start, end) {
            whole.bytes()
        } else {
            Self::edge(whole, major, end).bytes()
        }
    }

    /// How a persistent launch of `workers` clusters shares the units of `args` (tiles of every
    /// batch entry): the kernel walks it, and the host gives the launch a workspace if it splits.
    /// `None` for kernels without stream-K.
    pub const fn schedule(&self, args: &crate::args::GemmArgs, workers: u32) -> Option<crate::sched::StreamK> {
        match self.stream_k {
            Some(s) => {
                let units = self.scheduler(args.m, args.n).num_tiles() * args.batch;
                let num_kb = args.k.div_ceil(s.block_k);
                Some(if s.spread {
                    crate::sched::StreamK::spread(units, num_kb, workers)
                } else {
                    crate::sched::StreamK::new(units, num_kb, workers)
                })
            }
            None => None,
        }
    }

    /// What a ladder version starts from: C = A·Bᵀ with K-major A and B, a CTA per tile, no
    /// cluster, C stored by the threads, none of the library's general call. A version names
    /// itself and sets its tile, threads, shared memory and boxes, and what it changes, with
    /// struct-update syntax (`KernelSpec { cluster: 2, ..base }`); the fields it must set are
    /// left empty here (a test checks that every ladder version sets them).
    pub const fn ladder(family: Family) -> KernelSpec {
        KernelSpec {
            name: "",
            family,
            version: 0,
            adds: "",
            tile_m: 0,
            tile_n: 0,
            group_m: 0,
            threads: 0,
            cluster: 1,
            cluster_along_n: false,
            grid: Grid::PerTile,
            smem_bytes: 0,
            a_box: TmaBox::new(0, 0, Swizzle::None),
            b_box: TmaBox::new(0, 0, Swizzle::None),
            c_box: None,
            a_major: Major::K,
            b_major: Major::K,
            general: false,
            edge_maps: false,
            c_col_major: false,
            stream_k: None,
            dependent_launch: false,
            holds_tile: false,
        }
    }
}

/// Rows of a tile's operand (`rows` of them per tile) that each CTA of a `cluster` loads per K
/// slice: where the cluster shares the operand (`shared`), its share, multicast to the cluster;
/// otherwise all of them, for itself. Kernels size their boxes by it, and the edge maps and the
/// bytes a stage expects follow from it.
pub const fn share_rows(rows: u32, cluster: u32, shared: bool) -> u32 {
    if shared { rows / cluster } else { rows }
}

/// Byte offsets, from the dynamic shared-memory base (1024-byte aligned), of what a kernel keeps
/// in shared memory: `stages` A and B tiles, an output staging area, then 8-byte mbarriers and a
/// 4-byte tensor-memory address slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmemPlan {
    pub a: u32,
    pub b: u32,
    pub a_stage_bytes: u32,
    pub b_stage_bytes: u32,
    pub c: u32,
    pub barriers: u32,
    pub tmem_slot: u32,
    pub bytes: u32,
}

const fn align_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

impl SmemPlan {
    /// Operand stages first (each stage 1024-aligned, as the 128-byte swizzle atom requires),
    /// then `c_bytes` of staging, then `barriers` mbarriers and the tensor-memory slot.
    pub const fn new(stages: u32, a_stage_bytes: u32, b_stage_bytes: u32, c_bytes: u32, barriers: u32) -> Self {
        let a_stage_bytes = align_up(a_stage_bytes, 1024);
        let b_stage_bytes = align_up(b_stage_bytes, 1024);
        let a = 0;
        let b = a + stages * a_stage_bytes;
        let c = b + stages * b_stage_bytes;
        let barriers_at = align_up(c + c_bytes, 8);
        let tmem_slot = barriers_at + 8 * barriers;
        SmemPlan {
            a,
            b,
            a_stage_bytes,
            b_stage_bytes,
            c,
            barriers: barriers_at,
            tmem_slot,
            bytes: align_up(tmem_slot + 4, 16),
        }
    }

    pub const fn a_stage(&self, stage: u32) -> u32 {
        self.a + stage * self.a_stage_bytes
    }

    pub const fn b_stage(&self, stage: u32) -> u32 {
        self.b + stage * self.b_stage_bytes
    }

    /// Offset of the `i`-th mbarrier.
    pub const fn barrier(&self, i: u32) -> u32 {
        self.barriers + 8 * i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_boxes_end_at_the_output_and_bytes_count_what_is_loaded() {
        let v7 = crate::hopper::v7::SPEC;
        let rows = |m| v7.a_edge_box(m).outer;
        // The last tile row's rows before M, rounded up to 8; whole where M fills its tiles.
        assert_eq!(
            (rows(1), rows(16), rows(100), rows(128), rows(160), rows(8000), rows(8192)),
            (8, 16, 104, 128, 32, 64, 128)
        );
        assert_eq!((v7.a_edge_box(16).inner, v7.a_edge_box(16).swizzle), (v7.a_box.inner, v7.a_box.swizzle));
        // B's box is a CTA's share of the pair's 256 columns: 128.
        let cols = |n| v7.b_edge_box(n).outer;
        assert_eq!((cols(8), cols(60), cols(128), cols(200), cols(8000)), (8, 64, 128, 72, 64));
        // Bytes per K slice: the whole box inside M, the edge box across it, nothing past it.
        let slice = 64 * 2;
        assert_eq!(
            (v7.a_share_bytes(0, 8192), v7.a_share_bytes(7936, 8000), v7.a_share_bytes(8064, 8000)),
            (128 * slice, 64 * slice, 0)
        );
        assert_eq!((v7.a_share_bytes(0, 1), v7.a_share_bytes(128, 160)), (8 * slice, 32 * slice));
        assert_eq!(
            (v7.b_share_bytes(0, 200), v7.b_share_bytes(128, 200), v7.b_share_bytes(256, 200)),
            (128 * slice, 72 * slice, 0)
        );
        // The kernel loads through the edge map exactly where the bytes count the edge box.
        assert_eq!(
            (v7.a_share_at_edge(0, 8192), v7.a_share_at_edge(7936, 8000), v7.a_share_at_edge(0, 100)),
            (false, true, true)
        );
        assert_eq!(
            (v7.b_share_at_edge(0, 200), v7.b_share_at_edge(128, 200), v7.b_share_at_edge(128, 256)),
            (false, true, false)
        );
        // An M- or N-major operand keeps its 64-wide boxes and loads those that start before the end.
        let mn = crate::hopper::v7::VARIANTS.iter().find(|s| s.a_major == Major::MN && s.b_major == Major::MN).unwrap();
        assert_eq!((mn.a_edge_box(16), mn.b_edge_box(16)), (mn.a_box, mn.b_box));
        let boxed = 64 * slice;
        assert_eq!(
            (mn.a_share_bytes(0, 8192), mn.a_share_bytes(0, 16), mn.a_share_bytes(0, 65), mn.a_share_bytes(128, 100)),
            (2 * boxed, boxed, 2 * boxed, 0)
        );
        assert_eq!((mn.b_share_bytes(128, 4096), mn.b_share_bytes(128, 200)), (2 * boxed, 2 * boxed));
        assert_eq!(mn.b_share_bytes(128, 150), boxed);
        // The ladder's kernels take three maps.
        assert!(!crate::hopper::v6::SPEC.edge_maps && v7.edge_maps);
    }

    #[test]
    fn every_ladder_version_sets_what_the_base_leaves_empty() {
        let ladders = [crate::hopper::LADDER, crate::blackwell::LADDER];
        for (family, ladder) in Family::ALL.into_iter().zip(ladders) {
            for (version, s) in ladder.iter().enumerate() {
                assert_eq!((s.family, s.version), (family, version as u32), "{}", s.name);
                let v = s.name.strip_prefix(family.name()).and_then(|r| r.strip_prefix("_v"));
                assert_eq!(v.and_then(|v| v.parse().ok()), Some(version), "{}", s.name);
                assert!(!s.adds.is_empty() && s.tile_m > 0 && s.tile_n > 0 && s.threads > 0, "{}", s.name);
                assert!(s.smem_bytes > 0 && s.a_box.bytes() > 0 && s.b_box.bytes() > 0, "{}", s.name);
            }
        }
    }

    #[test]
    fn smem_plan_aligns_stages_and_packs_barriers() {
        let p = SmemPlan::new(4, 128 * 64 * 2, 256 * 64 * 2, 0, 8);
        assert_eq!(p.a_stage(0), 0);
        assert_eq!(p.a_stage(3), 3 * 16384);
        assert_eq!(p.b_stage(0), 4 * 16384);
        assert_eq!(p.b_stage(1) - p.b_stage(0), 32768);
        assert_eq!(p.barrier(0), 4 * 16384 + 4 * 32768);
        assert_eq!(p.barrier(7) + 8, p.tmem_slot);
        assert_eq!(p.bytes % 16, 0);
        // A stage whose size is not a multiple of 1024 still starts the next one aligned.
        let q = SmemPlan::new(2, 1000, 1000, 100, 1);
        assert_eq!(q.a_stage(1), 1024);
        assert_eq!(q.b_stage(1) % 1024, 0);
        assert!(q.barriers >= q.c + 100);
    }

    #[test]
    fn family_from_compute_capability() {
        assert_eq!(Family::for_compute_capability(9, 0), Some(Family::Hopper));
        assert_eq!(Family::for_compute_capability(10, 0), Some(Family::Blackwell));
        assert_eq!(Family::for_compute_capability(10, 3), Some(Family::Blackwell));
        assert_eq!(Family::for_compute_capability(8, 9), None);
        assert_eq!(Family::for_compute_capability(12, 0), None);
    }
}
