//! The launch plan: a call ([`GemmOp`]) and a kernel's spec turned into what one launch needs
//! (tensor-map parameters, scalar arguments, grid and stream-K split) by plain Rust, before
//! anything touches the GPU; and the kernel's own refusals of a call, worded.

use crate::error::{Error, Lack, Result};
use crate::op::{GemmOp, Layout};
use crate::tensor_map::TensorMapParams;
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::fused::BiasType;
use hgemm_kernels::sched::{StreamK, Workspace};
use hgemm_kernels::spec::{Family, Grid, KernelSpec};
use hgemm_kernels::staging::tma_strides_fit;

/// Grid, block, cluster and shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// CTAs along x (a multiple of `cluster`).
    pub grid: u32,
    /// Batch entries along y.
    pub grid_y: u32,
    /// Threads per CTA.
    pub block: u32,
    /// CTAs per cluster (along x).
    pub cluster: u32,
    /// Dynamic shared memory per CTA, bytes.
    pub smem: u32,
    /// The kernel's stream-K schedule on this grid, where it splits tiles: each launch then
    /// passes it and its stream's workspace (without one the kernel computes every tile whole).
    pub split: Option<StreamK>,
    /// Launched with programmatic stream serialization ([`KernelSpec::dependent_launch`]): the
    /// kernel may start while the previous one in the stream finishes, and waits for it itself.
    pub dependent: bool,
}

impl LaunchShape {
    /// The shape `spec` is launched with for `args` (an `m × n` output, `batch` of them). A
    /// persistent kernel walks every tile of every batch entry itself, striding by its clusters
    /// along x: it gets one row of at most `max_clusters` clusters (as many as fit on the device
    /// at once), and no more clusters than tiles unless its stream-K schedule splits tiles
    /// between them; a second row would compute every tile again, and with beta ≠ 0 read a C
    /// another row may already have updated. A per-tile kernel gets a row per batch entry.
    /// `stream_k` allows the split. Only for `args` of a call [`supports`]
    /// accepts (its tile count fits the kernels' 32-bit walk); [`shape`]
    /// is the checked way in.
    pub(crate) fn new(spec: &KernelSpec, args: &GemmArgs, max_clusters: u32, stream_k: bool) -> LaunchShape {
        let tiles = spec.scheduler(args.m, args.n).num_tiles();
        let mut split = None;
        let (clusters, grid_y) = match spec.grid {
            Grid::PerTile => (tiles, args.batch),
            Grid::Persistent => {
                let most = persistent_clusters(spec, max_clusters);
                let units = tiles.saturating_mul(args.batch);
                split = spec.schedule(args, most).filter(|sk| stream_k && sk.splits());
                (if split.is_some() { most } else { units.min(most).max(1) }, 1)
            }
        };
        LaunchShape {
            grid: clusters * spec.cluster,
            grid_y,
            block: spec.threads,
            cluster: spec.cluster,
            smem: spec.smem_bytes,
            split,
            dependent: spec.dependent_launch,
        }
    }

    /// `grid` CTAs of `block` threads in one row, `smem` bytes of dynamic shared memory each, no
    /// cluster, no stream-K, launched plainly: the shape of the library's utility kernels.
    pub(crate) fn plain(grid: u32, block: u32, smem: u32) -> LaunchShape {
        LaunchShape { grid, grid_y: 1, block, cluster: 1, smem, split: None, dependent: false }
    }
}

/// The most clusters a persistent grid of `spec` gets: as many as fit on the device at once and,
/// for a stream-K kernel, no more CTAs than the workspace has flags for.
pub fn persistent_clusters(spec: &KernelSpec, max_clusters: u32) -> u32 {
    match spec.stream_k {
        Some(_) => max_clusters.min(Workspace::MAX_CTAS / spec.cluster),
        None => max_clusters,
    }
}

/// What a kernel needs for one launch, computed from a [`GemmOp`] in the kernel's form
/// ([`for_kernel`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Tensor maps of A, B and C, then, for kernels with edge maps, of A and B with the boxes
    /// their last tile row and column load ([`KernelSpec::a_edge_box`]).
    pub maps: Vec<TensorMapParams>,
    /// The kernel's scalar arguments.
    pub args: GemmArgs,
}

/// `op` as `spec` computes it: with C row-major, or column-major for an entry that writes C
/// column-major; and whether A and B traded places to get there (the caller's A is then the
/// kernel's B).
pub fn for_kernel(spec: &KernelSpec, op: &GemmOp) -> (GemmOp, bool) {
    if spec.c_col_major { op.col_major_c() } else { op.row_major_c() }
}

/// Why a kernel cannot compute a call (in the kernel's form, [`for_kernel`]); worded only when
/// reported, so that `choose` can rule out entries without formatting a message for each.
pub(crate) enum Refusal {
    /// C column-major with its contiguous dimension (the kernel's M), its leading dimension or
    /// its batch stride (for a batch) not a multiple of 8.
    ColMajorC {
        m: usize,
        ldc: usize,
        stride_c: Option<usize>,
    },
    /// More than one column of tiles (the kernel's N) for an entry that takes one.
    ColumnsOfTiles(usize),
    NotNative,
    /// A fused epilogue (bias, activation, gating) for an entry without one.
    Epilogue,
    Orders,
    /// More tiles, over every batch entry, than the kernels' 32-bit tile index walks: a worker
    /// steps from one unit to the next by the number of workers, which must not wrap.
    Units(u64),
    /// An SM budget ([`GemmOp::max_sms`]) the entry cannot keep: it launches a CTA per tile, or
    /// its cluster is larger than the budget.
    Budget(u32),
}

pub(crate) fn refusal(spec: &KernelSpec, op: &GemmOp) -> Option<Refusal> {
    let units = (op.m as u64)
        .div_ceil(spec.unit_m() as u64)
        .saturating_mul((op.n as u64).div_ceil(spec.unit_n() as u64))
        .saturating_mul(op.batch as u64);
    if units > i32::MAX as u64 {
        Some(Refusal::Units(units))
    } else if spec.c_col_major
        && !(op.m.is_multiple_of(8) && tma_strides_fit(op.ldc as u64, op.stride_c as u64, op.batch as u32))
    {
        Some(Refusal::ColMajorC { m: op.m, ldc: op.ldc, stride_c: (op.batch > 1).then_some(op.stride_c) })
    } else if spec.takes_one_column(op.side_by_side_epilogue()) && op.n > spec.tile_n as usize {
        Some(Refusal::ColumnsOfTiles(op.n))
    } else if op.fused() && !fuses_epilogue(spec) {
        Some(Refusal::Epilogue)
    } else if !spec.general && !op.is_native() {
        Some(Refusal::NotNative)
    } else if spec.a_major != op.a_major() || spec.b_major != op.b_major() {
        Some(Refusal::Orders)
    } else if let Some(budget) = op.max_sms
        && (spec.grid != Grid::Persistent || spec.cluster > budget)
    {
        Some(Refusal::Budget(budget))
    } else {
        None
    }
}

impl Refusal {
    /// The error reporting it: an SM budget it cannot keep ([`Error::SmBudget`]), what a
    /// Blackwell entry lacks by name ([`Error::Lacks`]), anything else worded
    /// ([`Error::Unsupported`]).
    fn error(&self, spec: &KernelSpec) -> Error {
        match (self, spec.family) {
            (Refusal::Budget(max_sms), _) => {
                Error::SmBudget { kernel: spec.name, max_sms: *max_sms, reason: self.reason(spec) }
            }
            (Refusal::Epilogue, Family::Blackwell) => Error::Lacks { kernel: spec.name, lack: Lack::FusedEpilogue },
            _ => Error::Unsupported { kernel: spec.name, reason: self.reason(spec) },
        }
    }

    fn reason(&self, spec: &KernelSpec) -> String {
        match *self {
            // The kernel stores C only through TMA, which writes whole 16-byte chunks.
            Refusal::ColMajorC { m, ldc, stride_c } => format!(
                "it writes C column-major through TMA only, which needs C's contiguous dimension ({m}), its leading dimension ({ldc}){} to be multiples of 8 elements",
                stride_c.map(|s| format!(" and its batch stride ({s})")).unwrap_or_default()
            ),
            Refusal::ColumnsOfTiles(n) => format!(
                "{}its last staging box reaches past its {}-column tile, so it takes only calls that one column of tiles covers (N ≤ {} in its form of the call; it is {n})",
                if spec.shifted_last_box() { "with beta ≠ 0, or alpha ≠ 1 and nothing fused, " } else { "" },
                spec.tile_n,
                spec.tile_n
            ),
            Refusal::NotNative => {
                "it computes only C = A·Bᵀ on dense row-major operands with alpha = 1, beta = 0 and one GEMM"
                    .to_string()
            }
            Refusal::Epilogue => format!(
                "it has no fused epilogue (bias, activation or gated units; {} v{} lacks it): Hopper's v7 entries fuse them",
                spec.family.name(),
                spec.version
            ),
            Refusal::Orders => format!("it reads A {:?}-major and B {:?}-major", spec.a_major, spec.b_major),
            Refusal::Units(units) => {
                format!("its {units} tiles (of every batch entry) are more than its 32-bit tile index walks (2^31 - 1)")
            }
            Refusal::Budget(budget) if spec.grid != Grid::Persistent => format!(
                "it launches one CTA per tile, which the hardware spreads over every SM; only persistent entries keep a budget (of {budget} SMs here)"
            ),
            Refusal::Budget(budget) => {
                format!("its clusters of {} CTAs need more SMs than the budget's {budget}", spec.cluster)
            }
        }
    }
}

/// Whether `spec` applies a fused epilogue (bias, activation, gating: [`GemmArgs::epilogue`]):
/// Hopper's v7 entries and Blackwell's library entries. Blackwell's ladder does not read it, and
/// the ladders compute only the native problem.
pub const fn fuses_epilogue(spec: &KernelSpec) -> bool {
    (matches!(spec.family, Family::Hopper) && spec.version == 7)
        || (matches!(spec.family, Family::Blackwell) && spec.general)
}

/// Bytes a bias vector's address (and each batch entry's, [`GemmOp::bias_stride`]) must be
/// aligned to: the kernels may load a block of 8 columns' bias with one vector load.
pub const BIAS_ALIGN: u64 = 16;

/// C as the kernel writes it, in memory: (rows, the contiguous dimension's length) of the
/// output, in the kernel's form of the call. A gated call's output is half as wide along the
/// dimension its gating runs (the kernel's N, or its M for an entry computing Cᵀ, `along_m`).
/// C's tensor map and TMA-store columns follow this output, not the GEMM's M×N: the one place
/// that decides what the kernel's C map describes for gated calls.
fn c_extent(op: &GemmOp, along_m: bool) -> (u64, u64) {
    let (m, n) = match (op.gated, along_m) {
        (false, _) => (op.m, op.n),
        (true, false) => (op.m, op.n / 2),
        (true, true) => (op.m / 2, op.n),
    };
    match op.c_layout {
        Layout::RowMajor => (m as u64, n as u64),
        Layout::ColMajor => (n as u64, m as u64),
    }
}

/// Whether `spec` can compute `op`, and if not, why: `op`'s own checks first
/// ([`GemmOp::validate`], buffers aside), then the kernel's.
pub fn supports(spec: &KernelSpec, op: &GemmOp) -> Result<()> {
    op.validate_shape()?;
    kernel_accepts(spec, op)
}

/// The kernel's own checks of [`supports`], for a call whose shape is valid.
pub(crate) fn kernel_accepts(spec: &KernelSpec, op: &GemmOp) -> Result<()> {
    match refusal(spec, &for_kernel(spec, op).0) {
        Some(r) => Err(r.error(spec)),
        None => Ok(()),
    }
}

/// Tensor maps and arguments for `spec` computing `op` (already validated) on buffers at `a`,
/// `b`, `c`: in the kernel's form ([`for_kernel`]), so A's maps may describe the caller's B. A
/// call with a bias goes through [`plan_fused`].
pub fn plan(spec: &KernelSpec, op: &GemmOp, a: u64, b: u64, c: u64) -> Result<Plan> {
    plan_fused(spec, op, a, b, None, c)
}

/// [`plan`] with the bias vector's device address and type, where `op` declares a bias
/// ([`GemmOp::bias`]); its length is the caller's check ([`GemmOp::validate_fused`]).
pub fn plan_fused(
    spec: &KernelSpec,
    op: &GemmOp,
    a: u64,
    b: u64,
    bias: Option<(u64, BiasType)>,
    c: u64,
) -> Result<Plan> {
    supports(spec, op)?;
    if op.bias != bias.map(|(_, ty)| ty) {
        return Err(Error::Bias { op: op.bias, buffer: bias.map(|(_, ty)| ty) });
    }
    let bias = bias.map_or(0, |(address, _)| address);
    if !bias.is_multiple_of(BIAS_ALIGN) {
        return Err(Error::Misaligned { operand: "bias", address: bias, align: BIAS_ALIGN });
    }
    let (op, swapped) = for_kernel(spec, op);
    let op = &op;
    // Errors name the operands as the caller knows them.
    let (a, b, name_a, name_b) = if swapped { (b, a, "B", "A") } else { (a, b, "A", "B") };
    let rank3 = |p: TensorMapParams| if spec.general { p.with_rank3() } else { Ok(p) };
    let batch = op.batch as u64;
    let (m, n, k) = (op.m as u64, op.n as u64, op.k as u64);
    // K = 0: the kernel reads neither A nor B; any valid map will do (the caller points them at
    // C's first row).
    let unread = |name, addr, tile| TensorMapParams::matrix(name, addr, 1, 8, 8, 1, 0, tile);
    // An operand of `mn` rows (of A or B's rows, as C needs them) by K, with K contiguous or not.
    let operand = |name, addr, k_contiguous: bool, mn: u64, ld: usize, stride: usize, tile| {
        if op.k == 0 {
            return unread(name, addr, tile);
        }
        let (rows, cols) = if k_contiguous { (mn, k) } else { (k, mn) };
        TensorMapParams::matrix(name, addr, rows, cols, ld as u64, batch, stride as u64, tile)
    };
    let map_a = |tile| operand(name_a, a, op.a_layout == Layout::RowMajor, m, op.lda, op.stride_a, tile);
    let map_b = |tile| operand(name_b, b, op.b_layout == Layout::ColMajor, n, op.ldb, op.stride_b, tile);
    // C in memory: rows of its contiguous dimension (N, or M for a column-major C), of the
    // output (half the GEMM's along the gating for a gated call).
    let (c_rows, c_len) = c_extent(op, swapped);
    // An entry computing Cᵀ meets the bias and the gate/up blocks along its M.
    let epilogue = if swapped { op.epilogue().along_m() } else { op.epilogue() };
    let args = GemmArgs {
        c,
        ldc: op.ldc as u64,
        stride_c: op.stride_c as u64,
        alpha: op.alpha,
        beta: op.beta,
        epilogue,
        bias,
        bias_stride: op.bias_stride as u64,
        ..op.shape_args()
    };
    // TMA stores whole 16-byte chunks: the map stops at the last one that lies inside C's rows
    // and the kernel writes the columns after it directly (below 8 columns the map is not used
    // for stores at all, but must still describe something).
    let tma_columns = args.tma_store_columns(c_len as u32) as u64;
    let c_cols = if tma_columns == 0 { c_len } else { tma_columns };
    // C first: with K = 0, A's and B's maps point at C, whose fault it then is.
    let map_c = match spec.c_box {
        // A C that TMA cannot write at all: the kernel's threads store every column (and read no
        // map of C), bf16 by bf16 where C is not 4-byte aligned.
        Some(_) if spec.stores_any_c() && tma_columns == 0 => {
            if !c.is_multiple_of(2) {
                return Err(Error::Misaligned { operand: "C", address: c, align: 2 });
            }
            None
        }
        Some(c_box) => Some(
            TensorMapParams::matrix("C", c, c_rows, c_cols, op.ldc as u64, batch, op.stride_c as u64, c_box).map_err(
                |e| Error::Unsupported {
                    kernel: spec.name,
                    reason: format!("its TMA-store epilogue cannot write this C: {e}"),
                },
            )?,
        ),
        None if !c.is_multiple_of(4) => return Err(Error::Misaligned { operand: "C", address: c, align: 4 }),
        None => None,
    };
    let (whole_a, whole_b) = (map_a(spec.a_box)?, map_b(spec.b_box)?);
    // Not read by direct-store kernels, but they take three maps all the same. (The workspace is
    // the launch's, `Gemm::launch_prepared`, not the plan's.)
    let map_c = map_c.unwrap_or_else(|| whole_a.clone());
    let mut maps = vec![whole_a, whole_b, map_c];
    if spec.edge_maps {
        maps.extend([map_a(spec.a_edge_box(op.m as u32))?, map_b(spec.b_edge_box(op.n as u32))?]);
    }
    Ok(Plan { maps: maps.into_iter().map(rank3).collect::<Result<_>>()?, args })
}

/// The launch shape of `spec` for `op`, on a device that holds `max_clusters` of its clusters at
/// once, and within `op`'s SM budget ([`GemmOp::max_sms`]: at most that many CTAs, whole
/// clusters, which is also the stream-K split's worker count, and not launched as a programmatic
/// dependent where the budget holds the grid); an error where [`supports`]
/// refuses the call (its tiles could then overflow the shape's arithmetic, or the entry cannot
/// keep the budget), where there is nothing to launch (M, N or the batch is 0), or where a
/// persistent grid would get no cluster.
pub fn shape(spec: &KernelSpec, op: &GemmOp, max_clusters: u32) -> Result<LaunchShape> {
    if !op.validate_shape()? {
        return Err(Error::InvalidShape(format!(
            "nothing to launch: M = {}, N = {}, batch = {}",
            op.m, op.n, op.batch
        )));
    }
    kernel_accepts(spec, op)?;
    if spec.grid == Grid::Persistent && max_clusters == 0 {
        return Err(Error::Unsupported {
            kernel: spec.name,
            reason: format!("no cluster of {} CTAs fits on the device", spec.cluster),
        });
    }
    // At most one CTA per SM of the budget: several CTAs an SM (the occupancy `max_clusters`
    // counts) would be spread by the hardware over more SMs than the budget.
    let held = op.max_sms.map(|b| b / spec.cluster).filter(|&most| most < max_clusters);
    let (op, _) = for_kernel(spec, op);
    let shape = LaunchShape::new(spec, &op.shape_args(), held.unwrap_or(max_clusters), op.stream_k);
    // A grid the budget holds starts after its predecessor in the stream has finished: as a
    // programmatic dependent its CTAs would start while the previous grid's still run, on the
    // SMs the budget leaves to other streams.
    Ok(LaunchShape { dependent: shape.dependent && held.is_none(), ..shape })
}

/// The launch of `spec` for `op` on a GPU with `sms` SMs, worked out without a GPU (what `hgemm
/// plan` prints, with `auto`'s pick from `choose_offline`): a persistent grid is taken to hold
/// one CTA per SM; an error where [`shape`] gives one (`spec` does not support `op`, nothing to
/// launch, or fewer SMs than a cluster).
pub fn launch_offline(spec: &KernelSpec, op: &GemmOp, sms: u32) -> Result<LaunchShape> {
    shape(spec, op, sms / spec.cluster)
}

#[cfg(test)]
mod budget_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use hgemm_kernels::hopper;
    use hgemm_kernels::spec::Major;

    /// An `m × n × 512` problem, `batch` of them.
    fn args(m: u32, n: u32, batch: u32) -> GemmArgs {
        GemmArgs { batch, ..GemmArgs::new(m, n, 512, 0) }
    }

    #[test]
    fn ladder_kernels_refuse_general_calls() {
        let v6 = &hopper::v6::SPEC;
        assert!(supports(v6, &GemmOp::new(64, 64, 64)).is_ok());
        assert!(matches!(
            supports(v6, &GemmOp::new(64, 64, 64).beta(1.0)),
            Err(Error::Unsupported { kernel: "hopper_v6", .. })
        ));
        assert!(matches!(
            supports(&hopper::v7::SPEC, &GemmOp::new(64, 64, 64).b(Layout::RowMajor, 64)),
            Err(Error::Unsupported { .. })
        ));
        assert!(supports(&hopper::v7::SPEC, &GemmOp::new(64, 64, 64).beta(0.5).batched(2, 4096, 4096, 4096)).is_ok());
    }

    #[test]
    fn c_map_stops_at_the_last_whole_16_byte_chunk() {
        let op = GemmOp::new(64, 300, 64).c(Layout::RowMajor, 312);
        let p = plan(&hopper::v7::SPEC, &op, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!(p.maps[2].dims[0], 296);
        assert_eq!(p.args.n, 300);
        // Below 8 columns, or where TMA cannot write C at all (its rows 300 elements apart, or
        // its first element mid-chunk), the kernel's threads store every column and it is
        // handed A's map in C's place.
        for (n, ldc, c) in [(5, 8, 0x3000), (300, 300, 0x3000), (300, 312, 0x3002)] {
            let p =
                plan(&hopper::v7::SPEC, &GemmOp::new(64, n, 64).c(Layout::RowMajor, ldc), 0x1000, 0x2000, c).unwrap();
            assert_eq!(
                (p.args.tma_store_columns(n as u32), &p.maps[2]),
                (0, &p.maps[0]),
                "N {n}, ldc {ldc}, C at {c:#x}"
            );
        }
        // Entries that write through TMA only refuse such a C.
        let dense = GemmOp::new(64, 300, 64);
        assert!(
            matches!(plan(&hopper::v6::SPEC, &dense, 0x1000, 0x2000, 0x3000), Err(Error::Unsupported { reason, .. }) if reason.contains("cannot write this C"))
        );
    }

    #[test]
    fn plans_add_edge_maps_whose_boxes_end_at_the_output() {
        // The edge maps' boxes are the ones the kernel counts its bytes by (`a_share_bytes`,
        // `b_share_bytes`): a mismatch would leave a stage's barrier waiting for bytes that never come.
        let v7 = &hopper::v7::SPEC;
        let rows = |spec: &KernelSpec, op: &GemmOp| {
            let p = plan(spec, op, 0x3000, 0x3000, 0x3000).unwrap();
            p.maps.iter().map(|m| m.box_dims[1]).collect::<Vec<_>>()
        };
        // A, B, C, A's edge, B's edge: 160 rows end 32 into the second tile row, 16 columns 16
        // into the first share of B; whole boxes where M or N fill their tiles.
        assert_eq!(rows(v7, &GemmOp::new(160, 4096, 64)), [128, 128, 64, 32, 128]);
        assert_eq!(rows(v7, &GemmOp::new(4096, 16, 64).c(Layout::RowMajor, 16)), [128, 128, 64, 128, 16]);
        assert_eq!(rows(v7, &GemmOp::new(8000, 8000, 64)), [128, 128, 64, 64, 64]);
        assert_eq!(rows(v7, &GemmOp::new(4096, 4096, 64)), [128, 128, 64, 128, 128]);
        for (op, m0, n0) in [(GemmOp::new(160, 4096, 64), 128, 0), (GemmOp::new(8000, 8000, 64), 7936, 7936)] {
            let r = rows(v7, &op);
            assert_eq!(v7.a_share_bytes(m0, op.m as u32), r[3] * 64 * 2);
            assert_eq!(v7.b_share_bytes(n0, op.n as u32), r[4] * 64 * 2);
        }
        // Tiles paired along N share A: each CTA loads half of the tile's 128 rows of A, and its
        // own 80 rows of B. 8100 rows end 36 into the last half (rounded up to 40), 150 columns
        // 70 into the first pair's second tile (72).
        let twin = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_twin80_kk").unwrap();
        let op = GemmOp::new(8100, 150, 64).c(Layout::RowMajor, 152);
        assert_eq!(rows(twin, &op), [64, 80, 64, 40, 72]);
        assert_eq!((twin.unit_m(), twin.unit_n(), twin.scheduler(8100, 150).num_tiles()), (128, 160, 64));
        assert_eq!(
            (twin.a_share_bytes(8064, 8100), twin.a_share_bytes(8000, 8100), twin.a_share_bytes(8128, 8100)),
            (40 * 128, 64 * 128, 0)
        );
        assert_eq!(
            (twin.b_share_bytes(0, 150), twin.b_share_bytes(80, 150), twin.b_share_bytes(160, 150)),
            (80 * 128, 72 * 128, 0)
        );
        assert_eq!(
            (twin.a_share_at_edge(8000, 8100), twin.a_share_at_edge(8064, 8100), twin.b_share_at_edge(80, 150)),
            (false, true, true)
        );
        // An M-major A and an N-major B keep their boxes, 64 elements of M or N wide.
        let mn = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_wide_mnmn").unwrap();
        let op = GemmOp::new(16, 16, 64).a(Layout::ColMajor, 16).b(Layout::RowMajor, 16);
        let p = plan(mn, &op, 0x3000, 0x3000, 0x3000).unwrap();
        assert!(p.maps.iter().enumerate().all(|(i, m)| i == 2 || m.box_dims[..2] == [64, 64]));
        // The ladder's kernels take three maps, with whole boxes.
        assert_eq!(rows(&hopper::v6::SPEC, &GemmOp::new(16, 4096, 64)), [128, 128, 64]);
    }

    #[test]
    fn column_major_entries_take_the_call_turned_round() {
        // C = A·Bᵀ with a row-major 160×8192 C is, for an entry that writes C column-major,
        // Cᵀ = B·Aᵀ: its A is the caller's B (8192 rows), its B the caller's A (160 rows).
        let cm = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_lean_kk_cm").unwrap();
        let op = GemmOp::new(160, 8192, 64);
        let p = plan(cm, &op, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!((p.args.m, p.args.n, p.args.k), (8192, 160, 64));
        assert_eq!((p.maps[0].address, p.maps[0].dims), (0x2000, [64, 8192, 1]));
        assert_eq!((p.maps[1].address, p.maps[1].dims), (0x1000, [64, 160, 1]));
        // C as it lies in memory: 160 rows of 8192; B's edge map ends at the kernel's N = 160.
        assert_eq!((p.maps[2].address, p.maps[2].dims), (0x3000, [8192, 160, 1]));
        assert_eq!((p.maps[3].box_dims[1], p.maps[4].box_dims[1]), (64, 64));
        assert_eq!(
            shape(cm, &op, 66).unwrap().grid,
            shape(cm, &GemmOp::new(8192, 160, 64).c(Layout::ColMajor, 8192), 66).unwrap().grid
        );
        // Errors still name the caller's operands.
        assert_eq!(
            plan(cm, &op, 0x1002, 0x2000, 0x3000),
            Err(Error::Misaligned { operand: "A", address: 0x1002, align: 16 })
        );
        // The same call with a column-major C needs no turning round.
        let col = GemmOp::new(160, 8192, 64).c(Layout::ColMajor, 160);
        let p = plan(cm, &col, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!((p.args.m, p.args.n, p.maps[0].address, p.maps[2].dims), (160, 8192, 0x1000, [160, 8192, 1]));
    }

    #[test]
    fn k_zero_plans_without_reading_a_or_b() {
        let op = GemmOp::new(64, 64, 0).beta(0.5);
        let p = plan(&hopper::v7::SPEC, &op, 0x3000, 0x3000, 0x3000).unwrap();
        assert_eq!(p.args.k, 0);
        assert_eq!(p.maps[0].address, 0x3000);
        // A's and B's maps point at C then, rounded down to 16 bytes (`Gemm::prepare_raw`): a C
        // that starts mid-chunk is stored by the threads, and one not even 2-byte aligned is
        // C's fault, named so.
        let p = plan(&hopper::v7::SPEC, &op, 0x3000, 0x3000, 0x3008).unwrap();
        assert_eq!(p.args.tma_store_columns(64), 0);
        assert_eq!(
            plan(&hopper::v7::SPEC, &op, 0x3000, 0x3000, 0x3009).err(),
            Some(Error::Misaligned { operand: "C", address: 0x3009, align: 2 })
        );
    }
    #[test]
    fn only_the_library_kernels_are_dependent_launches() {
        // v0–v6 keep the launch they were measured with; Blackwell's v7 could wait the same way,
        // but nothing here could run it.
        for spec in hgemm_kernels::kernels() {
            let s = LaunchShape::new(spec, &args(1024, 1024, 1), 132, true);
            assert_eq!(s.dependent, spec.dependent_launch, "{}", spec.name);
            let library = spec.family == hgemm_kernels::spec::Family::Hopper && spec.version == 7;
            assert_eq!(spec.dependent_launch, library, "{}", spec.name);
        }
    }

    #[test]
    fn per_tile_grid_covers_partial_tiles() {
        let spec = &hopper::v0::SPEC;
        let s = LaunchShape::new(spec, &args(8192, 8192, 1), 132, true);
        assert_eq!(s.grid, (8192 / spec.tile_m) * (8192 / spec.tile_n));
        let s = LaunchShape::new(spec, &args(129, 257, 1), 132, true);
        assert_eq!(s.grid, 2 * 2);
        assert_eq!((s.block, s.cluster, s.smem), (spec.threads, 1, spec.smem_bytes));
    }

    #[test]
    fn persistent_batches_are_one_row_of_clusters() {
        // v7 walks tiles × batch entries along x; it never reads a y index.
        let spec = &hopper::v7::SPEC;
        let tiles = spec.scheduler(300, 520).num_tiles();
        let s = LaunchShape::new(spec, &args(300, 520, 3), 66, true);
        assert_eq!((s.grid, s.grid_y), (3 * tiles * spec.cluster, 1));
        let s = LaunchShape::new(spec, &args(8192, 8192, 4), 66, true);
        assert_eq!((s.grid, s.grid_y), (66 * spec.cluster, 1));
    }

    #[test]
    fn stream_k_grids_take_every_cluster_when_they_split() {
        let spec = &hopper::v7::SPEC;
        // 12 units of 64 K blocks: split across all 66 pairs.
        let split = GemmArgs::new(520, 776, 4096, 0);
        assert!(spec.schedule(&split, 66).unwrap().splits());
        let s = LaunchShape::new(spec, &split, 66, true);
        assert_eq!((s.grid, s.split.is_some()), (132, true));
        // The kernel walks the split it is passed with one worker per cluster of the grid: the
        // host's schedule must be the one for that many workers.
        assert_eq!(s.split, spec.schedule(&split, s.grid / s.cluster));
        let s = LaunchShape::new(spec, &split, 66, false);
        assert_eq!((s.grid, s.split), (24, None), "stream-K not allowed");
        // The same 12 units at K = 512 are too shallow to split: one pair each.
        let whole = GemmArgs::new(520, 776, 512, 0);
        assert!(!spec.schedule(&whole, 66).unwrap().splits());
        let s = LaunchShape::new(spec, &whole, 66, true);
        assert_eq!((s.grid, s.split), (24, None));
        // Never more CTAs than the workspace has flags for.
        let deep = GemmArgs::new(520, 776, 65536, 0);
        assert_eq!(LaunchShape::new(spec, &deep, 5000, true).grid, Workspace::MAX_CTAS);
    }

    #[test]
    fn thin_tiles_launch_one_cta_per_sm_without_clusters() {
        let thin = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_thin_kk").unwrap();
        // 16×4096: 64 tiles of 64 K blocks on 132 SMs, split by K.
        let small_m = GemmArgs::new(16, 4096, 4096, 0);
        let s = LaunchShape::new(thin, &small_m, 132, true);
        assert_eq!((s.grid, s.cluster, s.block, s.split.is_some()), (132, 1, 256, true));
        // Forbidden to split: one CTA per tile.
        assert_eq!(LaunchShape::new(thin, &small_m, 132, false).grid, 64);
    }

    #[test]
    fn every_spec_fits_the_launch_limits() {
        for spec in hgemm_kernels::kernels() {
            assert!(spec.threads % 128 == 0 && spec.threads <= 1024, "{}", spec.name);
            assert!(spec.smem_bytes <= 227 * 1024, "{} needs {} bytes", spec.name, spec.smem_bytes);
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 66, true);
            assert_eq!(s.grid % spec.cluster, 0, "{}", spec.name);
            if spec.grid == Grid::Persistent {
                assert_eq!(s.grid, 66 * spec.cluster, "{}", spec.name);
            }
        }
    }

    #[test]
    fn blackwell_pairs_and_persistent_grids() {
        use hgemm_kernels::blackwell;
        // v0–v3: one CTA per 128×256 tile, no cluster.
        for spec in &blackwell::LADDER[..4] {
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), u32::MAX, true);
            assert_eq!((s.grid, s.cluster, s.block), (64 * 32, 1, 128), "{}", spec.name);
        }
        // v4: per-tile pairs, a cluster per 256×256 unit; partial units still launch whole pairs.
        let v4 = &blackwell::v4::SPEC;
        let s = LaunchShape::new(v4, &args(8192, 8192, 1), u32::MAX, true);
        assert_eq!((s.grid, s.cluster), (2 * 32 * 32, 2));
        let s = LaunchShape::new(v4, &args(129, 257, 1), u32::MAX, true);
        assert_eq!(s.grid, 2 * 2);
        // v5–v7: persistent. A 148-SM B200 fits 74 pairs (one CTA per SM, given their shared
        // memory): the grid is 148 CTAs, a multiple of the cluster size.
        for spec in &blackwell::LADDER[5..] {
            assert_eq!(spec.cluster, 2, "{}", spec.name);
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 148 / spec.cluster, true);
            assert_eq!((s.grid, s.cluster, s.block, s.smem), (148, 2, 256, spec.smem_bytes), "{}", spec.name);
            // An odd SM count (a partitioned GPU) still gets whole pairs.
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 147 / spec.cluster, true);
            assert_eq!(s.grid, 146, "{}", spec.name);
            // Fewer units than pairs: no idle clusters are launched.
            let s = LaunchShape::new(spec, &args(300, 300, 1), 74, true);
            let units = spec.scheduler(300, 300).num_tiles();
            assert_eq!(s.grid, units * 2, "{}", spec.name);
            assert!(units < 74);
        }
        // v7's unit is 512×256: 16 × 32 units at 8192², more than a wave of 74 pairs.
        assert_eq!(blackwell::v7::SPEC.scheduler(8192, 8192).num_tiles(), 16 * 32);
    }

    #[test]
    fn fused_epilogues_reach_the_arguments() {
        use hgemm_kernels::fused::{Activation, BiasType};
        let v7 = &hopper::v7::SPEC;
        let op = GemmOp::new(300, 512, 64).bias(BiasType::F32).activation(Activation::GeluTanh).bias_stride(0);
        let p = plan_fused(v7, &op, 0x1000, 0x2000, Some((0x4000, BiasType::F32)), 0x3000).unwrap();
        assert_eq!((p.args.epilogue, p.args.bias, p.args.bias_stride), (op.epilogue(), 0x4000, 0));
        // The bias as declared, aligned; none without a buffer.
        assert_eq!(
            plan_fused(v7, &op, 0x1000, 0x2000, Some((0x4008, BiasType::F32)), 0x3000),
            Err(Error::Misaligned { operand: "bias", address: 0x4008, align: 16 })
        );
        assert_eq!(plan(v7, &op, 0x1000, 0x2000, 0x3000), Err(Error::Bias { op: Some(BiasType::F32), buffer: None }));
        // An activation alone plans without a bias.
        let relu = GemmOp::new(300, 512, 64).activation(Activation::Relu);
        assert_eq!(plan(v7, &relu, 0x1000, 0x2000, 0x3000).unwrap().args.epilogue, relu.epilogue());
        // No ladder entry fuses an epilogue; each says so, Blackwell's by name (`Error::Lacks`).
        // Blackwell's library entries fuse them all, gated units too.
        assert!(matches!(supports(&hopper::v6::SPEC, &relu), Err(Error::Unsupported { .. })));
        let gated = GemmOp::new(300, 512, 64).activation(Activation::Silu).gated();
        for bw in hgemm_kernels::kernels().filter(|k| k.family == Family::Blackwell) {
            if bw.general {
                assert!(fuses_epilogue(bw), "{}", bw.name);
                // (Each in the orders it reads.)
                let ordered = relu.a(if bw.a_major == Major::K { Layout::RowMajor } else { Layout::ColMajor }, 304).b(
                    if bw.b_major == Major::K { Layout::ColMajor } else { Layout::RowMajor },
                    if bw.b_major == Major::K { 64 } else { 512 },
                );
                let ordered = if bw.a_major == Major::K { ordered.a(Layout::RowMajor, 64) } else { ordered };
                assert_eq!(supports(bw, &ordered), Ok(()), "{}", bw.name);
                let gated = gated.a(ordered.a_layout, ordered.lda).b(ordered.b_layout, ordered.ldb);
                assert_eq!(supports(bw, &gated), Ok(()), "{}", bw.name);
            } else {
                assert_eq!(supports(bw, &relu), Err(Error::Lacks { kernel: bw.name, lack: Lack::FusedEpilogue }));
                assert_eq!(supports(bw, &gated), Err(Error::Lacks { kernel: bw.name, lack: Lack::FusedEpilogue }));
            }
        }
        // Every Hopper v7 entry takes a fused call with beta = 0 where it takes the plain call
        // (the fused pass applies alpha; v6's epilogue, which shifts a trimmed tile's last
        // staging box, or the gated threads store it), and one with beta where it takes the
        // epilogue that scales (entries that shift their last box take one column of tiles).
        let (plain, scaled) = (GemmOp::new(300, 512, 64), GemmOp::new(300, 512, 64).beta(1.0));
        let mut side_by_side = 0;
        for spec in hopper::v7::VARIANTS.iter().chain([v7]) {
            assert!(fuses_epilogue(spec), "{}", spec.name);
            for fused in [relu, relu.alpha(0.5), gated, gated.alpha(2.0)] {
                assert_eq!(supports(spec, &fused).is_ok(), supports(spec, &plain).is_ok(), "{}", spec.name);
                assert_eq!(supports(spec, &fused.beta(1.0)).is_ok(), supports(spec, &scaled).is_ok(), "{}", spec.name);
            }
            side_by_side += (supports(spec, &relu).is_ok() && supports(spec, &scaled).is_err()) as usize;
        }
        // The trimmed tiles (224, 160, 112, 96, 80 columns) in K-major orders, in both forms.
        assert!(side_by_side >= 8, "{side_by_side}");
    }

    #[test]
    fn gated_calls_map_the_output_and_entries_computing_c_transposed_gate_along_m() {
        use hgemm_kernels::fused::Activation;
        let v7 = &hopper::v7::SPEC;
        // 300 rows, N = 512 interleaved columns: C has 256 columns, and its map 256.
        let op = GemmOp::new(300, 512, 64).activation(Activation::Silu).gated();
        let p = plan(v7, &op, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!((p.args.n, p.args.ldc, p.maps[2].dims[0], p.maps[2].dims[1]), (512, 256, 256, 300));
        assert!(p.args.epilogue.is_gated() && !p.args.epilogue.is_along_m());
        // Padded C: TMA columns follow the output's width, 304 (not the GEMM's 608).
        let op = GemmOp::new(64, 608, 64).gated().c(Layout::RowMajor, 312);
        let p = plan(v7, &op, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!((p.args.tma_store_columns(304), p.maps[2].dims[0]), (304, 304));
        // An entry writing C column-major computes Cᵀ = B·Aᵀ: its M is the caller's N, along
        // which the gate/up blocks (and the bias) run; C in memory is still 160 rows of 4096.
        let cm = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_lean_kk_cm").unwrap();
        let op = GemmOp::new(160, 8192, 64).activation(Activation::Silu).gated();
        let p = plan(cm, &op, 0x1000, 0x2000, 0x3000).unwrap();
        assert_eq!((p.args.m, p.args.n), (8192, 160));
        assert!(p.args.epilogue.is_gated() && p.args.epilogue.is_along_m());
        assert_eq!(p.maps[2].dims[..2], [4096, 160]);
        // Not gated, the same swap marks the bias as running along M.
        let op = GemmOp::new(160, 8192, 64).bias(hgemm_kernels::fused::BiasType::Bf16);
        let p =
            plan_fused(cm, &op, 0x1000, 0x2000, Some((0x5000, hgemm_kernels::fused::BiasType::Bf16)), 0x3000).unwrap();
        assert!(p.args.epilogue.is_along_m() && !p.args.epilogue.is_gated());
        assert_eq!(p.maps[2].dims[..2], [8192, 160]);
    }
}
