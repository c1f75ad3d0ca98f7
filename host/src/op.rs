//! The call: what to compute ([`GemmOp`]), checked and turned into a launch plan by plain Rust
//! before anything touches the GPU.

use crate::error::{Error, Result};
use crate::launch::LaunchShape;
use crate::tensor_map::TensorMapParams;
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::sched::StreamK;
use hgemm_kernels::spec::{Grid, KernelSpec, Major};
use hgemm_kernels::staging::tma_strides_fit;

/// Storage order of a matrix in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Rows are contiguous; the leading dimension is the distance between rows.
    RowMajor,
    /// Columns are contiguous; the leading dimension is the distance between columns.
    ColMajor,
}

impl Layout {
    fn flip(self) -> Layout {
        match self {
            Layout::RowMajor => Layout::ColMajor,
            Layout::ColMajor => Layout::RowMajor,
        }
    }
}

/// C = alpha·A·B + beta·C for a strided batch: A is M×K, B is K×N, C is M×N, each stored in
/// either order with its own leading dimension in elements (for A and B a multiple of 8: TMA
/// moves rows of 16-byte multiples; for C any, since Hopper v7 stores a C that TMA cannot
/// address with its threads). Batch entry `i` of each operand starts `stride_*·i` elements after
/// the first.
///
/// [`GemmOp::new`] describes the project's native problem, C = A·Bᵀ with A (M×K), B (N×K) and C
/// all row-major and dense: in these terms B is K×N column-major.
///
/// ```
/// use hgemm::{GemmOp, Layout};
/// // y = x·W for x (M×K) and W (K×N), both row-major, accumulating into y:
/// let op = GemmOp::new(128, 4096, 1024).b(Layout::RowMajor, 4096).beta(1.0);
/// assert_eq!(op.ldb, 4096);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmOp {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B (a multiple of 8).
    pub k: usize,
    /// Storage order of A.
    pub a_layout: Layout,
    /// Leading dimension of A, elements.
    pub lda: usize,
    /// Storage order of B.
    pub b_layout: Layout,
    /// Leading dimension of B, elements.
    pub ldb: usize,
    /// Storage order of C.
    pub c_layout: Layout,
    /// Leading dimension of C, elements.
    pub ldc: usize,
    /// Scale of A·B.
    pub alpha: f32,
    /// Scale of the old C; with 0, C is not read.
    pub beta: f32,
    /// GEMMs in the batch.
    pub batch: usize,
    /// Elements between batch entries of A.
    pub stride_a: usize,
    /// Elements between batch entries of B.
    pub stride_b: usize,
    /// Elements between batch entries of C.
    pub stride_c: usize,
    /// Let a kernel with a stream-K schedule split tiles' K blocks across its workers when that
    /// balances the last wave (on by default). Splitting takes a workspace per stream (per thread
    /// on the per-thread default stream; about 17 MiB on an H200, allocated by the first split
    /// call on that stream, freed with the handle or by `Gemm::release_workspace`) and changes the
    /// order in which a split tile's sums are added, not the result's determinism. A split launch
    /// also keeps its whole waves in step through a counter in that workspace: each wave waits
    /// until every worker has issued the one before, which needs the whole persistent grid
    /// resident at once; where other kernels hold SMs, a worker gives up waiting after 50 µs.
    pub stream_k: bool,
}

impl GemmOp {
    /// The sizes alone, as kernel arguments (what launch shapes and schedules depend on).
    pub(crate) fn shape_args(&self) -> GemmArgs {
        GemmArgs { batch: self.batch as u32, ..GemmArgs::new(self.m as u32, self.n as u32, self.k as u32, 0) }
    }

    /// C = A·Bᵀ: A (M×K), B (N×K) and C (M×N) row-major and dense, one GEMM.
    pub fn new(m: usize, n: usize, k: usize) -> GemmOp {
        GemmOp {
            m,
            n,
            k,
            a_layout: Layout::RowMajor,
            lda: k,
            b_layout: Layout::ColMajor,
            ldb: k,
            c_layout: Layout::RowMajor,
            ldc: n,
            alpha: 1.0,
            beta: 0.0,
            batch: 1,
            // Unread for one GEMM; saturated as in `dense_stride`.
            stride_a: m.saturating_mul(k),
            stride_b: n.saturating_mul(k),
            stride_c: m.saturating_mul(n),
            stream_k: true,
        }
    }

    /// A's storage order and leading dimension (A is M×K).
    pub fn a(self, layout: Layout, ld: usize) -> GemmOp {
        GemmOp {
            a_layout: layout,
            lda: ld,
            stride_a: self.dense_stride(self.stride_a, layout, self.m, self.k, ld),
            ..self
        }
    }

    /// B's storage order and leading dimension (B is K×N).
    pub fn b(self, layout: Layout, ld: usize) -> GemmOp {
        GemmOp {
            b_layout: layout,
            ldb: ld,
            stride_b: self.dense_stride(self.stride_b, layout, self.k, self.n, ld),
            ..self
        }
    }

    /// C's storage order and leading dimension (C is M×N).
    pub fn c(self, layout: Layout, ld: usize) -> GemmOp {
        GemmOp {
            c_layout: layout,
            ldc: ld,
            stride_c: self.dense_stride(self.stride_c, layout, self.m, self.n, ld),
            ..self
        }
    }

    /// Scale A·B by `alpha`.
    pub fn alpha(self, alpha: f32) -> GemmOp {
        GemmOp { alpha, ..self }
    }

    /// Add `beta` times the old C.
    pub fn beta(self, beta: f32) -> GemmOp {
        GemmOp { beta, ..self }
    }

    /// Allow (the default) or forbid stream-K splitting (see [`GemmOp::stream_k`](GemmOp#structfield.stream_k)).
    pub fn stream_k(self, allow: bool) -> GemmOp {
        GemmOp { stream_k: allow, ..self }
    }

    /// `count` GEMMs whose operands are `stride_a`, `stride_b`, `stride_c` elements apart. The
    /// storage-order setters keep these strides, whether they are called before or after.
    pub fn batched(self, count: usize, stride_a: usize, stride_b: usize, stride_c: usize) -> GemmOp {
        GemmOp { batch: count, stride_a, stride_b, stride_c, ..self }
    }

    /// The batch stride after a storage order or leading dimension is set: a dense one for it,
    /// unless [`GemmOp::batched`] has set the strides, which are then kept whatever the order of
    /// the calls. Saturated, so that sizes `validate` refuses cannot panic here in a debug build.
    fn dense_stride(&self, stride: usize, layout: Layout, rows: usize, cols: usize, ld: usize) -> usize {
        if self.batch == 1 { self.extent_rows(layout, rows, cols).saturating_mul(ld) } else { stride }
    }

    /// Rows in memory of a `rows × cols` matrix stored in `layout`.
    fn extent_rows(&self, layout: Layout, rows: usize, cols: usize) -> usize {
        match layout {
            Layout::RowMajor => rows,
            Layout::ColMajor => cols,
        }
    }

    /// Elements a buffer must hold for operand `name`.
    fn needed(
        name: &'static str,
        layout: Layout,
        rows: usize,
        cols: usize,
        ld: usize,
        batch: usize,
        stride: usize,
    ) -> Result<usize> {
        let (mem_rows, mem_cols) = match layout {
            Layout::RowMajor => (rows, cols),
            Layout::ColMajor => (cols, rows),
        };
        if ld < mem_cols {
            return Err(Error::LeadingDimension { operand: name, ld, min: mem_cols });
        }
        // Checked: wrapped, a huge stride would pass for a small buffer.
        let one = (mem_rows - 1).checked_mul(ld).and_then(|x| x.checked_add(mem_cols));
        one.and_then(|one| (batch - 1).checked_mul(stride)?.checked_add(one)).ok_or_else(|| {
            Error::InvalidShape(format!(
                "{name} spans more than 2^64 elements ({mem_rows} rows {ld} apart, {batch} of them {stride} apart)"
            ))
        })
    }

    /// Every check that needs no device: dimensions, leading dimensions, strides, buffer lengths.
    /// `Ok(false)` means there is nothing to compute (M, N or the batch is zero).
    pub fn validate(&self, len_a: usize, len_b: usize, len_c: usize) -> Result<bool> {
        for (name, v) in [("M", self.m), ("N", self.n), ("K", self.k)] {
            if v > i32::MAX as usize {
                return Err(Error::InvalidShape(format!(
                    "{name} = {v} exceeds 2^31 - 1 (TMA coordinates are 32-bit signed)"
                )));
            }
        }
        if !self.k.is_multiple_of(8) {
            return Err(Error::InvalidShape(format!(
                "K = {} is not a multiple of 8: TMA needs rows of A and B to be 16-byte multiples",
                self.k
            )));
        }
        if self.batch > i32::MAX as usize {
            return Err(Error::InvalidShape(format!(
                "batch of {} exceeds 2^31 - 1 (TMA coordinates are 32-bit signed)",
                self.batch
            )));
        }
        if !self.alpha.is_finite() || !self.beta.is_finite() {
            return Err(Error::InvalidShape(format!("alpha = {} and beta = {} must be finite", self.alpha, self.beta)));
        }
        if self.m == 0 || self.n == 0 || self.batch == 0 {
            return Ok(false);
        }
        let c = Self::needed("C", self.c_layout, self.m, self.n, self.ldc, self.batch, self.stride_c)?;
        let c_one = c - (self.batch - 1) * self.stride_c;
        if self.batch > 1 && self.stride_c < c_one {
            return Err(Error::InvalidShape(format!(
                "batch entries of C overlap: stride_c = {} but one C spans {c_one} elements",
                self.stride_c
            )));
        }
        if len_c < c {
            return Err(Error::BufferTooSmall { operand: "C", needed: c, len: len_c });
        }
        if self.k > 0 {
            let a = Self::needed("A", self.a_layout, self.m, self.k, self.lda, self.batch, self.stride_a)?;
            let b = Self::needed("B", self.b_layout, self.k, self.n, self.ldb, self.batch, self.stride_b)?;
            if len_a < a {
                return Err(Error::BufferTooSmall { operand: "A", needed: a, len: len_a });
            }
            if len_b < b {
                return Err(Error::BufferTooSmall { operand: "B", needed: b, len: len_b });
            }
        }
        Ok(true)
    }

    /// [`validate`](Self::validate)'s checks of the call itself, for buffers of any length: what
    /// planning, pricing and tuning check before any buffer exists.
    pub fn validate_shape(&self) -> Result<bool> {
        self.validate(usize::MAX, usize::MAX, usize::MAX)
    }

    /// The same computation with C row-major: a column-major C is Cᵀ = Bᵀ·Aᵀ row-major, so the
    /// operands swap places and each one's storage order reads the other way round.
    pub(crate) fn row_major_c(&self) -> (GemmOp, bool) {
        match self.c_layout {
            Layout::RowMajor => (*self, false),
            Layout::ColMajor => (self.transposed(), true),
        }
    }

    /// The same computation with C column-major (what entries with `c_col_major` compute).
    pub(crate) fn col_major_c(&self) -> (GemmOp, bool) {
        match self.c_layout {
            Layout::ColMajor => (*self, false),
            Layout::RowMajor => (self.transposed(), true),
        }
    }

    /// Cᵀ = Bᵀ·Aᵀ: the same memory, read as the transposed problem.
    fn transposed(&self) -> GemmOp {
        GemmOp {
            m: self.n,
            n: self.m,
            a_layout: self.b_layout.flip(),
            lda: self.ldb,
            b_layout: self.a_layout.flip(),
            ldb: self.lda,
            c_layout: self.c_layout.flip(),
            stride_a: self.stride_b,
            stride_b: self.stride_a,
            ..*self
        }
    }

    /// Whether this is exactly the native problem on dense operands (what v0–v6 compute).
    pub fn is_native(&self) -> bool {
        let dense = GemmOp::new(self.m, self.n, self.k);
        self.a_layout == dense.a_layout
            && self.b_layout == dense.b_layout
            && self.c_layout == Layout::RowMajor
            && (self.lda, self.ldb, self.ldc) == (dense.lda, dense.ldb, dense.ldc)
            && self.alpha == 1.0
            && self.beta == 0.0
            && self.batch == 1
    }

    /// Whether the kernels store this call's C with v6's epilogue (alpha = 1, beta = 0), the one
    /// that shifts a trimmed tile's last staging box (`KernelSpec::shifted_last_box`).
    pub fn plain_epilogue(&self) -> bool {
        self.alpha == 1.0 && self.beta == 0.0
    }

    /// A-operand order as the kernels see it (A is M×K: row-major is K-major).
    pub(crate) fn a_major(&self) -> Major {
        if self.a_layout == Layout::RowMajor { Major::K } else { Major::MN }
    }

    /// B-operand order as the kernels see it (B is K×N: column-major is K-major).
    pub(crate) fn b_major(&self) -> Major {
        if self.b_layout == Layout::ColMajor { Major::K } else { Major::MN }
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
enum Refusal {
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
    Orders,
    /// More tiles, over every batch entry, than the kernels' 32-bit tile index walks: a worker
    /// steps from one unit to the next by the number of workers, which must not wrap.
    Units(u64),
}

fn refusal(spec: &KernelSpec, op: &GemmOp) -> Option<Refusal> {
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
    } else if spec.takes_one_column(op.plain_epilogue()) && op.n > spec.tile_n as usize {
        Some(Refusal::ColumnsOfTiles(op.n))
    } else if !spec.general && !op.is_native() {
        Some(Refusal::NotNative)
    } else if spec.a_major != op.a_major() || spec.b_major != op.b_major() {
        Some(Refusal::Orders)
    } else {
        None
    }
}

impl Refusal {
    fn reason(&self, spec: &KernelSpec) -> String {
        match *self {
            // The kernel stores C only through TMA, which writes whole 16-byte chunks.
            Refusal::ColMajorC { m, ldc, stride_c } => format!(
                "it writes C column-major through TMA only, which needs C's contiguous dimension ({m}), its leading dimension ({ldc}){} to be multiples of 8 elements",
                stride_c.map(|s| format!(" and its batch stride ({s})")).unwrap_or_default()
            ),
            Refusal::ColumnsOfTiles(n) => format!(
                "{}its last staging box reaches past its {}-column tile, so it takes only calls that one column of tiles covers (N ≤ {} in its form of the call; it is {n})",
                if spec.shifted_last_box() { "with alpha ≠ 1 or beta ≠ 0 " } else { "" },
                spec.tile_n,
                spec.tile_n
            ),
            Refusal::NotNative => {
                "it computes only C = A·Bᵀ on dense row-major operands with alpha = 1, beta = 0 and one GEMM"
                    .to_string()
            }
            Refusal::Orders => format!("it reads A {:?}-major and B {:?}-major", spec.a_major, spec.b_major),
            Refusal::Units(units) => {
                format!("its {units} tiles (of every batch entry) are more than its 32-bit tile index walks (2^31 - 1)")
            }
        }
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
        Some(r) => Err(Error::Unsupported { kernel: spec.name, reason: r.reason(spec) }),
        None => Ok(()),
    }
}

/// Tensor maps and arguments for `spec` computing `op` (already validated) on buffers at `a`,
/// `b`, `c`: in the kernel's form ([`for_kernel`]), so A's maps may describe the caller's B.
pub fn plan(spec: &KernelSpec, op: &GemmOp, a: u64, b: u64, c: u64) -> Result<Plan> {
    supports(spec, op)?;
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
    // C in memory: rows of its contiguous dimension (N, or M for a column-major C).
    let (c_rows, c_len) = match op.c_layout {
        Layout::RowMajor => (m, n),
        Layout::ColMajor => (n, m),
    };
    let args = GemmArgs {
        c,
        ldc: op.ldc as u64,
        stride_c: op.stride_c as u64,
        alpha: op.alpha,
        beta: op.beta,
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

/// The kernel `auto` runs for `op` on a device with `sms` SMs: among the general kernels that
/// read A and B in `op`'s orders (in the form each computes it, [`for_kernel`]), the one whose
/// tiles take the least time, counting waves of tiles over the SMs and the work of one tile
/// relative to the widest (scaled by how efficient the shape measured); see [`price`].
pub fn choose<'a>(kernels: impl Iterator<Item = &'a KernelSpec>, op: &GemmOp, sms: u32) -> Option<&'a KernelSpec> {
    choose_why(kernels, op, sms).map(|(spec, _)| spec)
}

/// A rule of [`choose`] that takes a call from the cheapest entry, where the price alone was
/// measured to pick wrong; each one's comment in `choose_why` gives the measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// One whole wave of square pairs in one column gives way to whole twin pairs in one row
    /// priced within `ONE_COLUMN_SQUARE`.
    OneColumnSquare,
    /// The wide tile trimmed in many columns gives way to whole square pairs priced within
    /// `WIDE_TRIM_SQUARE`.
    WideTrimSquare,
    /// The wide tile with its last column at least half empty gives way to whole square pairs
    /// priced within `WIDE_HALF_EMPTY_SQUARE`.
    WideHalfEmptySquare,
    /// Square pairs split with fewer units than pairs give way to whole waves priced within
    /// `THIN_SQUARE_SPLIT`.
    ThinSquareSplit,
}

impl Rule {
    /// Every rule, in the order `choose` tries them.
    pub const ALL: [Rule; 4] =
        [Rule::OneColumnSquare, Rule::WideTrimSquare, Rule::WideHalfEmptySquare, Rule::ThinSquareSplit];

    /// The name of the rule's bound in `op.rs`, which `hgemm plan --why` prints.
    pub fn name(self) -> &'static str {
        match self {
            Rule::OneColumnSquare => "ONE_COLUMN_SQUARE",
            Rule::WideTrimSquare => "WIDE_TRIM_SQUARE",
            Rule::WideHalfEmptySquare => "WIDE_HALF_EMPTY_SQUARE",
            Rule::ThinSquareSplit => "THIN_SQUARE_SPLIT",
        }
    }

    /// How much dearer the entry the rule prefers may be priced and still take the call.
    fn bound(self) -> f64 {
        match self {
            Rule::OneColumnSquare => ONE_COLUMN_SQUARE,
            Rule::WideTrimSquare => WIDE_TRIM_SQUARE,
            Rule::WideHalfEmptySquare => WIDE_HALF_EMPTY_SQUARE,
            Rule::ThinSquareSplit => THIN_SQUARE_SPLIT,
        }
    }
}

/// [`choose`]'s pick, and the rule that took the call from the cheapest eligible entry, if one did.
pub fn choose_why<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
) -> Option<(&'a KernelSpec, Option<Rule>)> {
    // The cheapest candidate, the cheapest that runs whole units only, the cheapest whole square
    // pairs and the cheapest whole twin pairs in one row.
    let cheaper = |a: Option<Priced<'a>>, c: Priced<'a>| match a {
        Some(a)
            if a.cost
                .total_cmp(&c.cost)
                .then(a.twin_on_smaller.cmp(&c.twin_on_smaller))
                .then(a.shorter_m.cmp(&c.shorter_m))
                .is_le() =>
        {
            Some(a)
        }
        _ => Some(c),
    };
    let (best, best_whole, square_whole, one_row_twin_whole) = price(kernels, op, sms).filter(|c| c.eligible).fold(
        (None, None, None, None),
        |(best, whole, square, twin), c| {
            let square = if c.whole && c.square { cheaper(square, c) } else { square };
            let twin = if c.whole && c.one_row_twin { cheaper(twin, c) } else { twin };
            (cheaper(best, c), if c.whole { cheaper(whole, c) } else { whole }, square, twin)
        },
    );
    let best = best?;
    // One whole wave of square pairs in one column of tiles gives way to whole twin pairs in one
    // row (the same call in the other form) priced within `ONE_COLUMN_SQUARE` of it (twenty-ninth
    // session, forced, two rounds: the twins faster in both at all 11 such shapes measured, by
    // 0.6–5.5%: 14336×128×4096 twin112 0.98× cuBLAS against 0.93×, 12800×128×2048 0.99×
    // against 0.94×, 13056×128×1024 1.08× against 1.03×). The square pairs leave 10–16 of 66
    // pairs idle where the twins fill 128–132 SMs with tiles 112 wide; in two waves
    // (28672×128×1024) the twins were not faster (1.04× against 1.05×). Measured again after the
    // thirty-second session's epilogue fix (thirty-fourth session, 16 of its 49 moves, forced,
    // two rounds): the twins faster in 31 of the 32 readings, by 5.3% at K = 4096 and 8192 and
    // 1.1–1.4% at K = 1024 and 2048; kept. (With M or N of 128–32768 and the other of 64–256,
    // no bound up to 1.10 adds a move: one wave in one column is what limits it.)
    if let Some(twin) = one_row_twin_whole.filter(|t| {
        best.whole && best.square && best.one_wave_in_one_column && t.cost <= best.cost * Rule::OneColumnSquare.bound()
    }) {
        return Some((twin.spec, Some(Rule::OneColumnSquare)));
    }
    // The wide tile trimmed in many columns gives way to whole waves of square pairs priced
    // within `WIDE_TRIM_SQUARE` of it (twenty-eighth session, forced, two rounds: faster in both
    // at 19 of the 20 such shapes measured, by 0.3–5.5%, the rounds split at 4864×2176×16384:
    // 4864×2176×4096 0.98× cuBLAS against 0.94–0.95×, 3584×2944×4096 0.96–0.97× against
    // 0.92–0.93×, 5504×1920×8192 0.95× against 0.92×). Three of its whole waves there cost what
    // five of square pairs do; against the wide tile split it won wherever it was measured
    // (twenty-seventh session; at 8 of these 20, 0.92–1.01× against 0.87–0.97×). Measured
    // again after the thirty-second session's epilogue fix (30 of the fine grid's 33 moves have
    // the trimmed tile's last column partly empty), forced, two rounds: level, geometric mean
    // 1.002× (faster in both at 11, slower in both at 11; per shape 0.98–1.03×); kept.
    //
    // The wide tile, whole or split, where its last column of tiles is at least half empty,
    // gives way to whole waves of square pairs priced within `WIDE_HALF_EMPTY_SQUARE` of it
    // (thirty-first session, forced, two rounds). Against the wide tile split: faster in both at
    // 59 of the 79 such shapes measured, by up to 27%, slower in both at 3, by 1–2.4%, geometric
    // mean 1.042× (6016×1664×1024 1.25× the wide tile's speed, 6400×2688×2048 1.12×,
    // 7808×2176×4096 1.06×). Against the wide tile whole, at all 16 such shapes of the fine grid:
    // faster in both at 13, slower at 3, by 1.5–3.5%, geometric mean 1.036× (7552×1408×1024
    // 1.08–1.10×), and at all 4 of `hgemm plan`'s grids by 14–22% in three rounds
    // (28672×896×1024); priced 6–10% apart, the square pairs lost at 8 of 12. `price` counts
    // the empty half as work, and still the wide tile ran slower than priced, part of it a
    // fixed cost of every tile of a partly empty column that v7 no longer pays (thirty-second
    // session, 8447cd4). Measured again after that fix, two rounds: against the wide tile split
    // +2.2% over 40 of the moves (faster in both at 17, slower in both at 3); against it whole
    // −0.7% over the fine grid's 16, +0.4–5% over the grids' 4. Where N takes whole wide tiles
    // the comparison with the wide tile split was level (35 shapes, 0.95–1.05×): no rule there.
    if let Some(rule) = best.square_whole_within
        && let Some(sq) = square_whole.filter(|sq| sq.cost <= best.cost * rule.bound())
    {
        return Some((sq.spec, Some(rule)));
    }
    // Square pairs split with fewer units than pairs give way to whole waves priced within
    // `THIN_SQUARE_SPLIT` of them (twenty-sixth session, forced, two rounds: 3072×384×4096 trim
    // tiles written column-major 0.95× cuBLAS against 0.82×, 11008×128×4096 lean tiles written
    // column-major 0.97× against 0.85×, 256×4096×11008 slim pairs 1.02× against 0.93–0.97×,
    // 13824×128×4096 twin pairs 0.97× against 0.89×; faster in both rounds at all 14 of the 20
    // shapes of `hgemm plan`'s grids this moves that were measured, by 2–15%, the other six
    // their transposes or the same at another K). Against other split schedules square pairs
    // are priced about right: 10% dearer, they went to other splits that lost at 10 of 18.
    match best_whole {
        Some(w) if best.thin_square_split && w.cost <= best.cost * Rule::ThinSquareSplit.bound() => {
            Some((w.spec, Some(Rule::ThinSquareSplit)))
        }
        _ => Some((best.spec, None)),
    }
}

/// How [`choose`] weighs one entry for a call (`hgemm plan --why` prints them).
#[derive(Clone, Copy, Debug)]
pub struct Priced<'a> {
    /// The entry.
    pub spec: &'a KernelSpec,
    /// The time the entry's tiles take, in waves of 128×256 tiles at their measured rate: the
    /// lowest wins, but for the rules in [`choose`].
    pub cost: f64,
    /// Its stream-K schedule for the call in its form, if it has one.
    pub schedule: Option<StreamK>,
    /// Whether `choose` may take it; where not, the tiles it would run here were not measured to
    /// pay (a tile without a cluster in several rows and columns, or more columns of tiles than
    /// were measured: see the comments in `price`).
    pub eligible: bool,
    /// Ties between the lean tile and its column-major form go to the smaller (see `price`).
    shorter_m: usize,
    /// Twin pairs sharing the smaller operand: ties go to the pairs sharing the larger (see
    /// `price`).
    twin_on_smaller: bool,
    /// Its schedule runs every unit whole.
    whole: bool,
    /// Square pairs split with fewer units than pairs.
    thin_square_split: bool,
    /// Square pairs.
    square: bool,
    /// Its tiles make one column (N within a tile, in its form) and at most one wave.
    one_wave_in_one_column: bool,
    /// Twin pairs in one row of pairs (see `price`).
    one_row_twin: bool,
    /// The rule by which whole square pairs may take the call from it: the wide tile trimmed in
    /// five columns of tiles or more, or the wide tile with its last column at least half empty
    /// (see `choose`).
    square_whole_within: Option<Rule>,
}

/// Every general entry that can compute `op` (in its form, [`for_kernel`]) on a device with `sms`
/// SMs, with its price and whether [`choose`] may take it.
pub fn price<'a, 'b>(
    kernels: impl Iterator<Item = &'a KernelSpec> + 'b,
    op: &'b GemmOp,
    sms: u32,
) -> impl Iterator<Item = Priced<'a>> + 'b {
    // `op` is the call in `s`'s form, `sched` its schedule.
    let cost = move |s: &KernelSpec, op: &GemmOp, sched: Option<StreamK>| {
        let area = (s.tile_m * s.tile_n) as f64 / (128.0 * 256.0);
        let args = op.shape_args();
        let waves = match sched.filter(|_| op.stream_k) {
            // With stream-K the last wave may be split: count it in K blocks, and the split part
            // of the path (past the whole waves) 10% longer than it is (split units lose their
            // L2 reuse and wait for fix-ups: on the H200, split 128×256 tiles that the path put
            // up to 4% ahead of whole 128×192 ones ran 2–6% behind them at 3000³, 3072³,
            // 1536×6144×4096 and 768×8192×8192). The whole waves before it pay nothing: 6% of
            // the whole path kept the mid tile whole where seven waves of wide tiles and a split
            // one ran 2–5% faster (2048×15360×4096, 3584×15360×8192; thirtieth session).
            Some(sk) if sk.num_kb > 0 => {
                let (whole, path) = (sk.waves_in_step() as f64, sk.path() as f64 / sk.num_kb as f64);
                whole + (path - whole) * if sk.splits() { SPLIT_PENALTY } else { 1.0 }
            }
            _ => {
                let tiles =
                    s.scheduler(op.m as u32, op.n as u32).num_tiles() as u64 * s.cluster as u64 * op.batch as u64;
                tiles.div_ceil(sms as u64) as f64
            }
        };
        // Between tiles the tensor cores wait for the epilogue, unless the kernel holds the
        // finished tile and stores it under the next one's MMAs. The efficiencies include the
        // epilogue's share at the K they were fitted at; only a larger share (a shorter K) counts.
        let between_tiles = match s.stream_k.map_or(0, |sk| args.k.div_ceil(sk.block_k)) {
            kb if kb > 0 && !s.holds_tile => 1.0 + EPILOGUE_KB * (1.0 / kb as f64 - 1.0 / CALIBRATED_KB).max(0.0),
            _ => 1.0,
        };
        // The trim tile side by side runs faster than its one-column rate says: 1.03 of it picks
        // it where it was measured against the slim pairs `auto` ran (twenty-second session:
        // 1024×320×8192 0.94–1.04× cuBLAS against 0.83–0.86×, 1024×288×8192 0.99× against 0.89×)
        // and moves nothing else of `hgemm plan`'s grid but their transposes; 1.05 would take
        // 3000×320×8192 from the mid tile trimmed, not measured.
        let side_by_side = match ((s.tile_m, s.tile_n), columns_of_tiles(s, op)) {
            (TRIM, 2..) => TRIM_SIDE_BY_SIDE,
            (MID_TRIM, 5..) => MID_TRIM_MANY_COLUMNS,
            _ => 1.0,
        };
        // Twin pairs in one row of pairs read each operand once, as lean pairs do there, so
        // they share nothing the lean pairs do not (`ONE_ROW_TWIN`).
        let rate = if one_row_of_twins(s, op) { ONE_ROW_TWIN } else { tile_efficiency(s) };
        waves * between_tiles * area / (rate * side_by_side)
    };
    // A call `validate` refuses whatever the buffers, or one with nothing to compute, has no
    // kernel; nor has a kernel whose cluster is larger than the device.
    let valid = sms > 0 && op.validate_shape() == Ok(true);
    kernels.filter(move |s| valid && s.cluster <= sms).filter_map(move |s| {
        let kop = for_kernel(s, op).0;
        if !s.general || refusal(s, &kop).is_some() {
            return None;
        }
        // A tile without a cluster reads all of its operands itself: where M takes more than
        // one row of them and N more than one column, pairs sharing one (B, or A for the
        // twins) win even with half their tiles idle (96×8192×8192 on the H200: 0.64× cuBLAS
        // for 64×64 tiles, 0.93× for pairs of 64×128). With one column, B is a few rows that
        // every tile reads from L2.
        let shares = s.cluster > 1 || kop.m as u32 <= s.tile_m || kop.n as u32 <= s.tile_n;
        // On a tie between the lean tile and its column-major form, the form of the call
        // whose M (the side pairs stack along) is the shorter: measured 3.6–8% faster at
        // 4096×288…384×4096 and 2048×768×4096 (twelfth session), as at 1536×1024×4096 and
        // 3072×512×4096 (ninth). For the mid tile the same measurements found no such rule
        // (from −1.4% to +6%), so its ties keep the first entry.
        let shorter_m = if (s.tile_m, s.tile_n) == LEAN { kop.m } else { 0 };
        // Tiles that boxes do not divide run side by side only as far as that was measured
        // (twenty-second session): the trimmed tiles in two columns; not the 64×96 pair
        // (8192×192×8192: 0.72× cuBLAS in two columns against 0.88× for lean tiles). The
        // 160-column tiles also in four (N of 481–640, which the cost takes from 513), where
        // they beat what `auto` ran before at 26 of 28 shapes, by up to 18% (twenty-third
        // session: the mid tile trimmed at 8192×600×8192 0.90× against 0.78× for square
        // pairs, 600×8192×8192 0.91× against 0.77× for mid tiles; the trim tile at
        // 2048×640×4096 0.95× against 0.86× for square pairs): the trim tile only where that
        // is one wave of whole tiles, as at M = 2048, the only M it was measured at; the mid
        // tile trimmed not in three, which lost at 6 of 7 (8192×480×8192: 0.89× against 0.92×
        // for wide tiles).
        //
        // Twin pairs in several columns of pairs wherever they fill at most one wave, share the
        // larger operand, and, split by K, give each pair at least half a unit (within a K
        // block), so that no unit is cut in three. Twenty-fifth session, forced against what
        // `auto` ran: 4096×448×4096 1.02× cuBLAS against 0.88× for square pairs,
        // 384×4096×4096 1.00× against 0.91× for lean tiles, 4096×320×8192 0.99× against 0.87×
        // for trim tiles, 1024×640×4096, split, 0.96× against 0.81× for slim pairs; of the 55
        // shapes measured that this takes, faster in both rounds at 44, slower in both at 4
        // (3072×448×4096, split, 0.92× against 0.96× for lean tiles, whole; 768×1024×8192
        // −1%). Shares under half a unit lost at 4 of 7 (1024×448×4096 0.82× against 0.91×
        // for slim pairs). In two waves, pairs along M of tiles twice the size fill one
        // (8192×320×8192: 0.97× against 1.02× for the mid tile trimmed); where A is the
        // smaller operand, the pair would share the one that stays in L2, except in one row of
        // pairs (M ≤ 128 in the kernel's form), where every tile reads each operand once:
        // there twins as large as the lean tile or larger run wherever their units are whole,
        // at `ONE_ROW_TWIN` (cuBLAS's design at 128×14336×4096, `…_112x128_64x7_2x1`:
        // twin112 1.02× against split lean pairs' 0.92×, 14336×128×4096 1.00× against split
        // square pairs' 0.90×, 128×28672×8192 1.00× against 0.98×; the 80-wide twin was not
        // measured there).
        //
        // The 160-column tiles also in five columns or more, where they make at most two waves
        // of whole tiles at a K no shorter than the rates were fitted at (twenty-sixth
        // session, forced against what `auto` ran, two rounds: 512×5120×8192 1.02× cuBLAS
        // against 0.92× for wide tiles split, 10240×256×4096 0.98× against 0.83× for square
        // pairs split, 256×5120×4096 0.97× against 0.88× for the same, as trim tiles; faster
        // in both rounds at 38 of 39 shapes at K ≥ 4096, level at 896×2560×8192). At
        // K = 1024 they lost at 3 of 6 (640×3072×1024: 0.82–0.85× against slim pairs'
        // 0.97–1.02×).
        //
        // Twin pairs also where they share the smaller operand, if they fill one whole wave, the
        // other side is at most 1.5 times theirs and K is as deep as the rates were fitted at
        // (twenty-seventh session, found by `Gemm::tune`, then forced against what `auto` ran,
        // two rounds: 1024×1280×8192 twin80 0.97–0.98× cuBLAS against 0.90–0.91× for trim
        // tiles, 1280×1024×4096 0.96–0.97× against 0.87–0.88×, 1024×1536×4096 twin96 0.99×
        // against lean tiles' 0.93×; faster in both rounds at all 8 such shapes at K of 4096 and
        // 8192, by 3–10%). At K = 1024 they lost at 1 of 4 and split the rounds at another
        // (1024×1536×1024 1.12–1.26× against 1.32–1.34×). Where the same twins sharing the
        // larger operand are priced as low, those run (`Priced::twin_on_smaller`): of the
        // fine grid's moves measured in the twenty-eighth session, the five from twins sharing
        // the larger operand to the same twins sharing the smaller lost in both rounds, by 1–11%
        // (1024×1152×4096 twin80 1.00–1.05× cuBLAS against 1.12–1.13×, 1152×1280×4096 twin96
        // 0.98× against 1.06×), where the five from square pairs won (1536×1152×4096 twin112
        // 1.00× against 0.87×).
        //
        // The wide tile trimmed also in five columns or more, where it makes at most three
        // whole waves at that depth (twenty-seventh session, the same method: 512×7168×4096
        // 1.00–1.03× against 0.89× for mid tiles, 14336×256×4096 1.07× against 0.92–0.93×,
        // 256×28672×4096 1.05× against wide tiles split, 1.00×; faster in both rounds at all 46
        // shapes of `hgemm plan`'s grids this moves, by 0.2–16%, geometric mean 0.957× → 1.029×).
        // Without the wave bound it would also take shapes of many waves from the wide tile,
        // such as 12288³, where tuning finds the wide tile faster; with fewer than two rows of
        // tiles (M of 129–255, measured from 256) it would take 14336×208×4096 from the one
        // column of the same tile the thirteenth session measured.
        // The workers the launch would get (`persistent_clusters`: at most the workspace's CTAs).
        let sched = s.schedule(&kop.shape_args(), crate::launch::persistent_clusters(s, sms / s.cluster));
        let whole = |sk: &StreamK| !(kop.stream_k && sk.splits());
        let one_wave = sched.filter(|sk| sk.units <= sk.workers);
        let one_whole_wave = one_wave.is_some_and(|sk| whole(&sk));
        let one_wave_in_halves = one_wave.is_some_and(|sk| whole(&sk) || sk.share + 1 >= sk.num_kb.div_ceil(2));
        let calibrated_k = sched.is_some_and(|sk| sk.num_kb as f64 >= CALIBRATED_KB);
        let up_to_waves = |n: u32| sched.is_some_and(|sk| whole(&sk) && sk.units <= n * sk.workers) && calibrated_k;
        let (up_to_two_whole_waves, up_to_three_whole_waves) = (up_to_waves(2), up_to_waves(3));
        let twins_share_the_smaller_operand = kop.m < kop.n;
        let tile_columns = columns_of_tiles(s, &kop);
        let square = (s.tile_m, s.tile_n) == SQUARE;
        let one_row_twin = one_row_of_twins(s, &kop);
        let columns = match tile_columns {
            _ if one_row_twin => s.tile_m * s.tile_n >= LEAN.0 * LEAN.1 && sched.is_some_and(|sk| whole(&sk)),
            _ if s.cluster_along_n => {
                kop.n <= s.unit_n() as usize
                    || (kop.m >= kop.n && one_wave_in_halves)
                    || (twins_share_the_smaller_operand && one_whole_wave && 2 * kop.n <= 3 * kop.m && calibrated_k)
            }
            _ if !s.shifted_last_box() => true,
            1 => true,
            2 => (s.tile_m, s.tile_n) != NARROW96,
            4 => (s.tile_m, s.tile_n) == MID_TRIM || ((s.tile_m, s.tile_n) == TRIM && one_whole_wave),
            5.. => match (s.tile_m, s.tile_n) {
                MID_TRIM | TRIM => up_to_two_whole_waves,
                WIDE_TRIM => up_to_three_whole_waves && kop.m >= 2 * s.tile_m as usize,
                _ => false,
            },
            _ => false,
        };
        Some(Priced {
            spec: s,
            cost: cost(s, &kop, sched),
            schedule: sched,
            eligible: shares && columns,
            shorter_m,
            twin_on_smaller: s.cluster_along_n && twins_share_the_smaller_operand,
            whole: sched.is_none_or(|sk| whole(&sk)),
            thin_square_split: square && sched.is_some_and(|sk| !whole(&sk) && sk.units < sk.workers),
            square,
            one_wave_in_one_column: tile_columns == 1 && one_wave.is_some(),
            one_row_twin,
            square_whole_within: match (s.tile_m, s.tile_n) {
                WIDE_TRIM if tile_columns >= 5 => Some(Rule::WideTrimSquare),
                WIDE if kop.n.div_ceil(SQUARE.1 as usize) < 2 * tile_columns => Some(Rule::WideHalfEmptySquare),
                _ => None,
            },
        })
    })
}

/// How many columns of `spec`'s tiles cover `op` (in its form).
fn columns_of_tiles(spec: &KernelSpec, op: &GemmOp) -> usize {
    op.n.div_ceil(spec.tile_n as usize)
}

/// Whether `spec` computes `op` (in its form) as twin pairs in one row of pairs and several
/// columns, where every tile reads each operand once (see `choose`).
fn one_row_of_twins(spec: &KernelSpec, op: &GemmOp) -> bool {
    spec.cluster_along_n && op.m <= spec.tile_m as usize && op.n > spec.unit_n() as usize
}

/// What the split part of a stream-K schedule's path costs beyond its length, as a factor (see
/// `price`).
const SPLIT_PENALTY: f64 = 1.10;
/// How much dearer whole waves may be priced and still take a call from square pairs split with
/// fewer units than pairs (see `choose`): the measured whole entries were priced 1.2–5.6% above
/// the split and ran 2–15% faster.
const THIN_SQUARE_SPLIT: f64 = 1.06;
/// How much dearer whole twin pairs in one row may be priced and still take a call from whole
/// square pairs in one column (see `choose`): they were priced 2.3% above and ran 0.6–5.5% faster.
const ONE_COLUMN_SQUARE: f64 = 1.03;
/// The square tile's shape.
const SQUARE: (u32, u32) = (128, 128);
/// The wide tile's shape.
const WIDE: (u32, u32) = (128, 256);
/// How much dearer whole waves of square pairs may be priced and still take a call from the wide
/// tile with a half-empty last column (see `choose`): the measured ones were priced up to 5%
/// dearer, and ran 0.97–1.27× as fast (0.93–1.11× after the thirty-second session's fix).
const WIDE_HALF_EMPTY_SQUARE: f64 = 1.05;
/// How much dearer whole waves of square pairs may be priced and still take a call from the wide
/// tile trimmed in many columns (see `choose`): where they met, the square pairs were priced
/// 0.5% dearer and ran up to 5.5% faster.
const WIDE_TRIM_SQUARE: f64 = 1.01;

/// A tile's epilogue, in K blocks (64 deep) of its MMAs (see `choose`): the 128×256 tile's took
/// 1.7% of 8192³ (128 blocks) and 4% of 4096³ and 6144³ (64 and 96) before it was held, 2.2–2.6
/// blocks. With it, `auto` takes held 128×256 tiles over 128×192 ones at large M and N and K of
/// 512–2048, and nowhere else (8192×8192×1024: 1.035× cuBLAS against 0.951×, ×2048 1.031×
/// against 0.990×, fifteenth session).
const EPILOGUE_KB: f64 = 2.0;
/// The shortest K, in blocks, of the measurements `tile_efficiency` was fitted to (3000³,
/// 3072³): each efficiency already includes the epilogue's share at that depth or deeper.
const CALIBRATED_KB: f64 = 48.0;

/// The lean tile's shape (`tile_m`, `tile_n`): `choose` rates it, and breaks its ties.
const LEAN: (u32, u32) = (64, 192);
/// The trim tile, the lean one 160 columns wide.
const TRIM: (u32, u32) = (64, 160);
/// The trim tile's rate in two columns of tiles, relative to one (see `choose`).
const TRIM_SIDE_BY_SIDE: f64 = 1.03;
/// The mid tile trimmed to 160 columns.
const MID_TRIM: (u32, u32) = (128, 160);
/// The mid tile trimmed's rate in five columns of tiles or more, relative to one (see `choose`):
/// two waves of them beat wide tiles split by more than the two rates say (twenty-sixth
/// session: 1024×5120×5120 0.97× cuBLAS against 0.91×, 512×10240×8192 0.98× against 0.945×,
/// 2048×1280×8192 0.98–1.00× against 0.88×). 1.05 takes those; 1.0 leaves 22 shapes of `hgemm
/// plan`'s grids to the split, 1.06 moves 3 more, unmeasured. It misses 1024×5120×13824 (0.975×
/// against 0.94–0.96×).
const MID_TRIM_MANY_COLUMNS: f64 = 1.05;
/// The wide tile trimmed to 224 columns.
const WIDE_TRIM: (u32, u32) = (128, 224);
/// The 64×96 pair.
const NARROW96: (u32, u32) = (64, 96);

/// The twin pairs' rate (`tile_efficiency`).
const TWIN: f64 = 0.85;
/// The twin pairs' rate in one row of pairs and several columns (`choose`): just under the lean
/// tile's, so that where both make the same whole wave the lean pairs keep it (twenty-fifth
/// session: 128×12288×4096 lean 1.01× cuBLAS against twin96 0.98×, 128×11008×4096 level at
/// 0.93×), while whole twins take what lean or square pairs split (128×14336×4096 twin112 1.02×
/// against lean 0.92×, 14336×128×4096 1.00× against square pairs' 0.90×). 0.76–0.77 pick the
/// faster entry at 12 of the 14 shapes measured; the two missed keep what `auto` ran before
/// (96×12288×1024: twin96 1.08× against 64×96 pairs' 0.96×, split; 128×22016×1024 1.02× against
/// lean 0.99×).
const ONE_ROW_TWIN: f64 = 0.77;
/// The lean tile's rate (`tile_efficiency`).
const LEAN_RATE: f64 = 0.78;

/// Throughput of a tile shape relative to the 128×256 tile, as measured on the H200.
fn tile_efficiency(s: &KernelSpec) -> f64 {
    if s.cluster_along_n {
        // The twin pairs: 0.85 picks the faster entry at 37 of the 38 shapes measured against
        // them (twenty-fourth session: 8192×160×8192 twin80 1.00× cuBLAS against the trim tile's
        // 0.88×, 8192×208×8192 twin112 1.04× against square pairs' 0.90×; at M = 16384 the pairs
        // along M of larger tiles, one wave where twins take two: 16384×160×4096 midtrim 0.99×
        // against twin80 0.97×, 16384×192×4096 mid 1.00× against twin96 0.95×), and so does
        // anything from 0.845 to 0.89; below, 224×2048×8192 goes back to slim pairs (1.22×
        // against 1.38×), from 0.9 ties move 16384×152×8192 to the twins. The one no value
        // catches with the others: 6144×208×4096, lean tiles written column-major 0.95× against
        // 0.91× for the twins, split.
        return TWIN;
    }
    match (s.tile_m, s.tile_n) {
        // The lean tile: 0.77–0.79 picks the faster entry on every shape measured against it
        // (ninth session: 128×16384×8192 slim 0.969 against lean 0.951, 8192×136×8192 lean
        // 0.816 against mid 0.765).
        LEAN => LEAN_RATE,
        // The trim tile: 0.75 picks the faster entry on every shape measured against it, where
        // 0.70 and 0.80 each miss one (thirteenth session: 144×14336×4096 trim 0.83× cuBLAS
        // against mid 0.78×, 16384×144×4096 mid 0.875× against trim 0.85×).
        TRIM => 0.75,
        // The mid tile trimmed to 160 columns: 0.85–0.9 pick the faster entry on every shape
        // measured against it; 0.8 gives 14336×160×4096 and 144×14336×4096 back to the trim
        // tile (1–1.5% slower), and 0.95 takes 8192×160×8192 from it, split (thirteenth session).
        MID_TRIM => 0.9,
        // The wide tile trimmed to 224 columns: 0.95 picks the faster entry on every shape
        // measured against it; 0.9 leaves 14336×208×4096 and 208×14336×4096 to mid tiles (7%
        // slower), and 1.0 takes 8192×208×8192 from split square tiles (not measured).
        (128, 224) => 0.95,
        (_, 256..) => 1.0,
        (_, 192..) => 0.95,
        (128.., _) => 0.9,
        _ => 0.75,
    }
}

/// The launch shape of `spec` for `op`, on a device that holds `max_clusters` of its clusters at
/// once; an error where [`supports`] refuses the call (its tiles could then overflow the shape's
/// arithmetic), where there is nothing to launch (M, N or the batch is 0), or where a persistent
/// grid would get no cluster.
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
    let (op, _) = for_kernel(spec, op);
    Ok(LaunchShape::new(spec, &op.shape_args(), max_clusters, op.stream_k))
}

/// What `auto` would run for `op` among `kernels` on a GPU with `sms` SMs, and its launch, worked
/// out without a GPU (`hgemm plan`): a persistent grid is taken to hold one CTA per SM in
/// clusters that pair every SM, which is what the H200 reports (`cuOccupancyMaxActiveClusters`:
/// 66 pairs of 132 SMs) and what [`choose`] counts with; a GPU that holds fewer gets a smaller
/// grid from [`Gemm`](crate::Gemm), which asks the device.
pub fn choose_offline<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
) -> Option<(&'a KernelSpec, LaunchShape)> {
    let spec = choose(kernels, op, sms)?;
    // `choose` picks only entries that support the call.
    Some((spec, launch_offline(spec, op, sms).ok()?))
}

/// The launch [`choose_offline`] works out for `spec`, however it was chosen; an error where
/// [`shape`] gives one (`spec` does not support `op`, nothing to launch, or fewer SMs than a
/// cluster).
pub fn launch_offline(spec: &KernelSpec, op: &GemmOp, sms: u32) -> Result<LaunchShape> {
    shape(spec, op, sms / spec.cluster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hgemm_kernels::hopper;

    #[test]
    fn native_op_and_its_checks() {
        let op = GemmOp::new(256, 512, 64);
        assert!(op.is_native());
        assert_eq!(op.validate(256 * 64, 512 * 64, 256 * 512), Ok(true));
        assert_eq!(
            op.validate(256 * 64 - 1, 512 * 64, 256 * 512),
            Err(Error::BufferTooSmall { operand: "A", needed: 256 * 64, len: 256 * 64 - 1 })
        );
        assert_eq!(
            op.validate(256 * 64, 512 * 64 - 1, 256 * 512),
            Err(Error::BufferTooSmall { operand: "B", needed: 512 * 64, len: 512 * 64 - 1 })
        );
        assert_eq!(
            op.validate(256 * 64, 512 * 64, 100),
            Err(Error::BufferTooSmall { operand: "C", needed: 256 * 512, len: 100 })
        );
        assert!(
            matches!(GemmOp::new(8, 8, 12).validate(1000, 1000, 1000), Err(Error::InvalidShape(s)) if s.contains("multiple of 8"))
        );
        assert!(matches!(GemmOp::new(8, 8, 8).alpha(f32::NAN).validate(64, 64, 64), Err(Error::InvalidShape(_))));
        assert!(
            matches!(GemmOp::new(1 << 31, 8, 8).validate(0, 0, 0), Err(Error::InvalidShape(s)) if s.contains("M ="))
        );
    }

    #[test]
    fn zero_sizes_are_no_ops_and_k_zero_still_checks_c() {
        assert_eq!(GemmOp::new(0, 5, 8).validate(0, 0, 0), Ok(false));
        assert_eq!(GemmOp::new(5, 0, 8).validate(0, 0, 0), Ok(false));
        assert_eq!(GemmOp::new(5, 8, 8).batched(0, 0, 0, 0).validate(0, 0, 0), Ok(false));
        // K = 0: C = beta·C, A and B are not read.
        assert_eq!(GemmOp::new(4, 8, 0).validate(0, 0, 32), Ok(true));
        assert!(matches!(GemmOp::new(4, 8, 0).validate(0, 0, 31), Err(Error::BufferTooSmall { operand: "C", .. })));
    }

    #[test]
    fn leading_dimensions_and_layouts() {
        // A column-major M×K needs lda ≥ M; B row-major K×N needs ldb ≥ N.
        let op = GemmOp::new(100, 64, 32).a(Layout::ColMajor, 96);
        assert_eq!(
            op.validate(1 << 20, 1 << 20, 1 << 20),
            Err(Error::LeadingDimension { operand: "A", ld: 96, min: 100 })
        );
        let op = GemmOp::new(100, 64, 32).b(Layout::RowMajor, 56);
        assert_eq!(
            op.validate(1 << 20, 1 << 20, 1 << 20),
            Err(Error::LeadingDimension { operand: "B", ld: 56, min: 64 })
        );
        let op = GemmOp::new(100, 64, 32).c(Layout::RowMajor, 72);
        // Sub-matrix C: 99 rows of 72 plus one of 64.
        assert_eq!(op.validate(100 * 32, 64 * 32, 99 * 72 + 64), Ok(true));
        assert!(!op.is_native());
        assert_eq!((op.a_major(), op.b_major()), (Major::K, Major::K));
        let op = GemmOp::new(100, 64, 32).a(Layout::ColMajor, 104).b(Layout::RowMajor, 64);
        assert_eq!((op.a_major(), op.b_major()), (Major::MN, Major::MN));
    }

    #[test]
    fn spans_past_2_64_elements_are_refused_not_wrapped() {
        // Row 2^30 of a C whose rows are 2^34 elements apart ends past 2^64: computed with
        // wrapping arithmetic, C would need 8 elements, and the launch would write far outside
        // the caller's 8-element buffers.
        let rows = (1 << 30) + 1;
        let op = GemmOp::new(rows, 8, 8).a(Layout::RowMajor, 1 << 34).c(Layout::RowMajor, 1 << 34);
        assert!(
            matches!(op.validate(8, 64, 8), Err(Error::InvalidShape(s)) if s.contains("C spans")),
            "{:?}",
            op.validate(8, 64, 8)
        );
        let op = GemmOp::new(rows, 8, 8).a(Layout::RowMajor, 1 << 34);
        assert!(matches!(op.validate(8, 64, rows * 8), Err(Error::InvalidShape(s)) if s.contains("A spans")));
        // The batch's stride, likewise.
        let op = GemmOp::new(8, 8, 8).batched(3, 64, 64, 1 << 63);
        assert!(matches!(op.validate(192, 192, 64), Err(Error::InvalidShape(s)) if s.contains("C spans")));
        // Sizes whose products pass 2^64 get the size error, not a panic or a wrapped stride.
        let op = GemmOp::new(1 << 40, 1 << 40, 1 << 40);
        assert!(matches!(op.validate(0, 0, 0), Err(Error::InvalidShape(s)) if s.contains("exceeds 2^31")));
    }

    #[test]
    fn a_batch_past_2_31_is_refused() {
        // Batch entry 2^31 would be TMA coordinate -2^31: its tiles loaded as zeros, its C
        // stores dropped, and the call reported as done.
        let count = (1 << 31) + 1;
        let op = GemmOp::new(1, 8, 8).c(Layout::RowMajor, 8).batched(count, 0, 0, 8);
        assert!(matches!(op.validate(8, 64, 8 * count), Err(Error::InvalidShape(s)) if s.contains("2^31")));
        assert!(GemmOp::new(1, 8, 8).batched(count - 2, 0, 0, 8).validate(8, 64, 8 * count).unwrap());
    }

    #[test]
    fn storage_orders_keep_the_batch_strides_in_either_order() {
        let before =
            GemmOp::new(64, 64, 64).batched(2, 8192, 8192, 8192).c(Layout::RowMajor, 72).a(Layout::ColMajor, 72);
        let after =
            GemmOp::new(64, 64, 64).c(Layout::RowMajor, 72).a(Layout::ColMajor, 72).batched(2, 8192, 8192, 8192);
        assert_eq!(before, after);
        assert_eq!((before.stride_a, before.stride_b, before.stride_c), (8192, 8192, 8192));
        // Without a batch the stride follows the leading dimension, dense.
        let one = GemmOp::new(64, 48, 64).c(Layout::RowMajor, 72).a(Layout::ColMajor, 80);
        assert_eq!((one.stride_a, one.stride_c), (64 * 80, 64 * 72));
    }

    #[test]
    fn shapes_no_kernel_can_index_get_no_kernel() {
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        let pick = |op: &GemmOp, sms| choose(kernels.iter().copied(), op, sms).map(|s| s.name);
        // Valid spans, but 2^46 wide tiles or more: every entry's 32-bit tile index would wrap.
        let huge = GemmOp::new(i32::MAX as usize, i32::MAX as usize, 8);
        assert_eq!(pick(&huge, 132), None);
        let r = supports(&hopper::v7::SPEC, &huge);
        assert!(matches!(&r, Err(Error::Unsupported { reason, .. }) if reason.contains("32-bit tile index")), "{r:?}");
        // The launch shape is refused the same way, not worked out in wrapping arithmetic.
        for spec in &kernels {
            assert!(matches!(shape(spec, &huge, 66), Err(Error::Unsupported { .. })), "{}", spec.name);
            assert!(matches!(launch_offline(spec, &huge, 132), Err(Error::Unsupported { .. })), "{}", spec.name);
        }
        assert!(matches!(
            shape(&hopper::v0::SPEC, &GemmOp::new(64, 64, 64).a(Layout::ColMajor, 64), 66),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(shape(&hopper::v7::SPEC, &GemmOp::new(8192, 8192, 8192), 66).map(|s| s.grid), Ok(132));
        // 2^31 - 1 entries of two tiles or more each.
        assert_eq!(pick(&GemmOp::new(1, 264, 8).batched(i32::MAX as usize, 0, 0, 264), 132), None);
        // Shapes `validate` refuses, and a device without SMs.
        assert_eq!(pick(&GemmOp::new(1 << 40, 1 << 40, 8), 132), None);
        assert_eq!(pick(&GemmOp::new(64, 64, 7), 132), None);
        assert_eq!(pick(&GemmOp::new(4096, 4096, 4096), 0), None);
        assert!(pick(&GemmOp::new(4096, 4096, 4096), 132).is_some());
    }

    #[test]
    fn batches_must_not_overlap_in_c() {
        let op = GemmOp::new(16, 16, 16).batched(3, 256, 256, 200);
        assert!(matches!(op.validate(1 << 20, 1 << 20, 1 << 20), Err(Error::InvalidShape(s)) if s.contains("overlap")));
        let op = GemmOp::new(16, 16, 16).batched(3, 256, 256, 256);
        assert_eq!(op.validate(3 * 256, 3 * 256, 3 * 256), Ok(true));
        assert!(matches!(op.validate(3 * 256, 3 * 256, 3 * 256 - 1), Err(Error::BufferTooSmall { operand: "C", .. })));
    }

    #[test]
    fn column_major_c_swaps_the_operands() {
        let op = GemmOp::new(100, 60, 32).a(Layout::RowMajor, 40).b(Layout::RowMajor, 64).c(Layout::ColMajor, 104);
        let (t, swapped) = op.row_major_c();
        assert!(swapped);
        assert_eq!((t.m, t.n, t.k), (60, 100, 32));
        // Cᵀ = Bᵀ·Aᵀ: the new A is Bᵀ (N×K), stored as B was, read the other way.
        assert_eq!((t.a_layout, t.lda), (Layout::ColMajor, 64));
        assert_eq!((t.b_layout, t.ldb), (Layout::ColMajor, 40));
        assert_eq!((t.c_layout, t.ldc), (Layout::RowMajor, 104));
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
    fn plans_map_each_layout_onto_the_kernel_coordinates() {
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        let op = GemmOp::new(300, 200, 64).a(Layout::ColMajor, 304).b(Layout::RowMajor, 200);
        let spec = choose(kernels.iter().copied(), &op, 132).unwrap();
        assert_eq!((spec.a_major, spec.b_major), (Major::MN, Major::MN));
        let p = plan(spec, &op, 0x1000, 0x2000, 0x3000).unwrap();
        // A column-major: K rows of M contiguous elements; B row-major: K rows of N.
        assert_eq!((p.maps[0].dims, p.maps[0].strides[0]), ([300, 64, 1], 608));
        assert_eq!((p.maps[1].dims, p.maps[1].strides[0]), ([200, 64, 1], 400));
        assert_eq!(p.maps[2].dims, [200, 300, 1]);
        assert!(p.maps.iter().all(|m| m.rank == 3), "general kernels take rank-3 maps");
        assert_eq!((p.args.m, p.args.n, p.args.k, p.args.batch), (300, 200, 64, 1));
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
    fn offline_functions_refuse_what_gemm_refuses() {
        let v7 = &hopper::v7::SPEC;
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        // Calls `validate` refuses are refused by `supports` and `shape` too, not cut to 32 bits.
        for op in [
            GemmOp::new(8192, 8192, (1 << 32) + 8192),
            GemmOp::new((1 << 32) + 256, 8192, 8192),
            GemmOp::new(8192, 8192, 12),
            GemmOp::new(256, 256, 64).alpha(f32::NAN),
        ] {
            assert!(matches!(supports(v7, &op), Err(Error::InvalidShape(_))), "{op:?}");
            assert!(matches!(shape(v7, &op, 66), Err(Error::InvalidShape(_))), "{op:?}");
            assert_eq!(choose(kernels.iter().copied(), &op, 132).map(|s| s.name), None);
        }
        // Nothing to launch, and no kernel priced, for an empty call.
        for op in [GemmOp::new(0, 128, 128), GemmOp::new(128, 0, 128), GemmOp::new(64, 64, 64).batched(0, 0, 0, 0)] {
            assert!(matches!(shape(v7, &op, 66), Err(Error::InvalidShape(s)) if s.contains("nothing to launch")));
            assert!(matches!(launch_offline(&hopper::v0::SPEC, &op, 132), Err(Error::InvalidShape(_))));
            assert_eq!(price(kernels.iter().copied(), &op, 132).count(), 0);
        }
        // A device too small for a pair holds no pair's persistent grid; one-CTA entries remain.
        let op = GemmOp::new(64, 4096, 4096);
        assert!(
            matches!(launch_offline(v7, &op, 1), Err(Error::Unsupported { reason, .. }) if reason.contains("no cluster"))
        );
        assert!(price(kernels.iter().copied(), &op, 1).all(|p| p.spec.cluster == 1));
        assert_eq!(choose_offline(kernels.iter().copied(), &op, 1).map(|(s, l)| (s.cluster, l.grid)), Some((1, 1)));
    }

    #[test]
    fn auto_picks_smaller_tiles_only_when_wide_ones_leave_sms_idle() {
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        let pick = |m, n, k| {
            let s = choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132).unwrap();
            (s.tile_m, s.tile_n)
        };
        let (wide, mid, square, slim, thin) = ((128, 256), (128, 192), (128, 128), (64, 128), (64, 64));
        assert_eq!(pick(8192, 8192, 8192), wide);
        assert_eq!(pick(2048, 2048, 2048), wide);
        assert_eq!(pick(512, 8192, 8192), wide);
        assert_eq!(pick(1024, 8192, 8192), wide);
        assert_eq!(pick(1024, 4096, 4096), wide);
        // Split wide tiles against whole smaller ones: each pick below was the fastest of the
        // three measured on the H200 (docs/performance.md, seventh session).
        assert_eq!(pick(2304, 2304, 2304), wide);
        assert_eq!(pick(2560, 4096, 4096), wide);
        assert_eq!(pick(5000, 5000, 5000), wide);
        assert_eq!(pick(768, 4096, 4096), mid);
        assert_eq!(pick(3000, 3000, 3000), mid);
        assert_eq!(pick(3072, 3072, 3072), mid);
        assert_eq!(pick(1536, 6144, 4096), mid);
        // Only the split part of the path pays the split's price: several whole waves of wide
        // tiles and a split one beat whole mid tiles, and short K still goes to whole ones
        // (thirtieth session, forced, two rounds: 2048×15360×4096 1.00–1.01× cuBLAS against
        // 0.95–0.97×; 3072×1792×1024 mid 0.85× against the wide tile split's 0.80×).
        assert_eq!(pick(2048, 15360, 4096), wide);
        assert_eq!(pick(3584, 15360, 8192), wide);
        assert_eq!(pick(3072, 1792, 1024), mid);
        assert_eq!(pick(1792, 3072, 1024), mid);
        // The wide tile, split or whole, with its last column half empty gives way to whole
        // square pairs priced within 5% (thirty-first session, forced, two rounds: 6016×1664×1024
        // 1.25× the wide tile split's speed, 6400×2688×2048 1.12×, 7808×2176×4096 1.06×;
        // 7552×1408×1024 1.08–1.10× the wide tile whole's); with whole columns it stays
        // (2560×4096×4096, priced as far apart, 0.98× as fast).
        assert_eq!(pick(6016, 1664, 1024), square);
        assert_eq!(pick(7808, 2176, 4096), square);
        assert_eq!(pick(6400, 2688, 2048), square);
        assert_eq!(pick(7552, 1408, 1024), square);
        assert_eq!(pick(2560, 4096, 4096), wide);
        assert_eq!(pick(1280, 8192, 4096), wide);
        // At short K the mid tile's epilogue, which the wide tile hides (`holds_tile`), decides
        // (fifteenth session, forced: 8192×8192×1024 1.035× cuBLAS against 0.951×, ×2048 1.031×
        // against 0.990×).
        assert_eq!(pick(8192, 8192, 1024), wide);
        assert_eq!(pick(8192, 8192, 2048), wide);
        assert_eq!(pick(512, 4096, 4096), square);
        assert_eq!(pick(1024, 2048, 4096), square);
        assert_eq!(pick(256, 8192, 8192), square);
        assert_eq!(pick(256, 4096, 4096), slim);
        assert_eq!(pick(128, 8192, 8192), slim);
        assert_eq!(pick(128, 16384, 8192), slim);
        // M ≤ 64: one row of thin tiles (measured against slim pairs on the H200, eighth
        // session: 64×4096×4096 1.00× cuBLAS against 0.86×, 16×14336×4096 0.92× against 0.83×).
        assert_eq!(pick(64, 64, 64), thin);
        assert_eq!(pick(64, 8192, 8192), thin);
        assert_eq!(pick(64, 1024, 8192), thin);
        assert_eq!(pick(40, 28672, 4096), thin);
        // M ≤ 32: narrow pairs written column-major, 16 or 32 columns of M (twenty-first
        // session: 16×14336×4096 0.963× cuBLAS against 0.934×, 32×28672×4096 0.964× against
        // 0.943×), where N, C's contiguous side, is a multiple of 8 as their TMA stores need.
        let (narrow16, narrow32) = ((64, 16), (64, 32));
        assert_eq!(pick(1, 4096, 4096), narrow16);
        assert_eq!(pick(8, 28672, 4096), narrow16);
        assert_eq!(pick(16, 14336, 4096), narrow16);
        assert_eq!(pick(17, 14336, 4096), narrow32);
        assert_eq!(pick(32, 28672, 8192), narrow32);
        assert_eq!(pick(16, 14337, 4096), thin);
        // N ≤ 64: one column of thin tiles.
        assert_eq!(pick(4096, 16, 4096), thin);
        assert_eq!(pick(16384, 64, 4096), thin);
        // Past one row or column of thin tiles, up to 96: 64×96 pairs (twenty-first session:
        // 96×14336×4096 0.963× cuBLAS against 0.895× for lean pairs, 8192×96×8192 1.007× against
        // 0.936× for slim pairs), written column-major where M is the short side. Past 96, slim
        // pairs (96×8192×8192 against thin tiles: 0.93× against 0.64×, eighth session).
        let narrow96 = (64, 96);
        assert_eq!(pick(65, 4096, 4096), narrow96);
        assert_eq!(pick(96, 8192, 8192), narrow96);
        assert_eq!(pick(96, 14336, 4096), narrow96);
        assert_eq!(pick(8192, 96, 8192), narrow96);
        assert_eq!(pick(16384, 72, 4096), narrow96);
        assert_eq!(pick(100, 4096, 4096), slim);
        assert_eq!(pick(128, 16384, 8192), slim);
        // M from 129 to 224 at large N: twin pairs with the operands' places traded, so that M
        // is the pair's 160, 192 or 224 columns and the pair shares B, the operand read from
        // DRAM (twenty-fourth session: 160×8192×8192 1.02× and 0.97× cuBLAS against 0.87× for
        // trim tiles, which shared A; 192×8192×8192 1.05× against 0.93× for lean tiles,
        // 208×8192×8192 1.00× against 0.90× for square pairs).
        let name = |m, n, k| choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132).unwrap().name;
        for m in [136, 152, 160] {
            assert_eq!(name(m, 8192, 8192), "hopper_v7_twin80_kk_cm", "{m}");
        }
        assert_eq!(name(168, 8192, 8192), "hopper_v7_twin96_kk_cm");
        assert_eq!(name(192, 8192, 8192), "hopper_v7_twin96_kk_cm");
        assert_eq!(name(160, 4096, 4096), "hopper_v7_twin80_kk_cm");
        assert_eq!(name(208, 8192, 8192), "hopper_v7_twin112_kk_cm");
        // Where the lean pairs take two waves, or fill one only with a split, mid pairs written
        // column-major take one (twelfth session, forced: 320×8192×8192 0.85× against 0.78× for
        // lean tiles, 192×14336×4096 0.92× against 0.89× for lean ones written column-major);
        // from 257 to 320, trimmed tiles side by side since (below).
        for (m, n, k) in [(384, 8192, 8192), (192, 14336, 4096), (168, 28672, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_mid_kk_cm", "{m}x{n}x{k}");
        }
        // M or N from 257 to 320: mid tiles trimmed to 160 columns, side by side (twenty-second
        // session, forced: 320×8192×8192 0.97× cuBLAS against 0.86× for mid tiles written
        // column-major, 8192×320×8192 1.02× against 0.88× for mid tiles, 16384×320×4096 0.97×
        // against 0.80×).
        for (m, n, k) in [(320, 8192, 8192), (288, 8192, 8192), (288, 28672, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk_cm", "{m}x{n}x{k}");
        }
        for (m, n, k) in [(8192, 320, 8192), (8192, 288, 8192), (16384, 320, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
        }
        // Where the mid tile trimmed so would leave pairs idle, twin pairs in two columns of
        // pairs, one wave (twenty-fifth session: 2048×320×4096 1.09× against 1.04× for the trim
        // tile side by side, which had taken it from slim pairs, 0.83×; 3072×320×8192 1.00×
        // against the mid tile trimmed's 0.97×), but not where their shares would be under half
        // a unit: the trim tile side by side at 1024×320×8192 (1.06× and 1.00× against the
        // twins' 1.07× and 0.93×) and at 1536×320×8192 (0.89× against 0.87×); and from 385 to 448
        // the wide tile trimmed to 224 in two columns (8192×448×8192 1.01× against 0.90× for
        // wide tiles, 448×8192×8192 1.09× against 0.97×, 8192×400×8192 0.91× against 0.81×).
        for (m, n, k) in [(2048, 320, 4096), (3072, 320, 8192), (3000, 320, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin80_kk", "{m}x{n}x{k}");
        }
        for (m, n) in [(1024, 320), (1024, 288), (1536, 320)] {
            assert_eq!(name(m, n, 8192), "hopper_v7_trim_kk", "{m}x{n}x8192");
        }
        assert_eq!(name(1024, 448, 4096), "hopper_v7_slim_kk");
        for (m, n, k) in [(8192, 448, 8192), (16384, 416, 4096), (8192, 400, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(448, 8192, 8192), "hopper_v7_widetrim_kk_cm");
        // Not the 64×96 pair in two columns (8192×192×8192: 0.72× against 0.88× for lean tiles;
        // twin pairs take it now), nor trimmed tiles in three columns, where they lost
        // (8192×480×8192: mid tiles trimmed to 160 0.89×, wide tiles 0.92×).
        assert_eq!(name(8192, 192, 8192), "hopper_v7_twin96_kk");
        assert_eq!(name(8192, 480, 8192), "hopper_v7");
        // (3000×480×8192 ran square pairs split until the twenty-sixth session, and whole lean
        // pairs since: the rule that whole waves take calls from thinly split square pairs.)
        assert_eq!(name(3000, 480, 8192), "hopper_v7_lean_kk_cm");
        // The mid tile trimmed in four columns, 520–640 (twenty-third session, forced against
        // what `auto` ran: 8192×600×8192 0.90× against 0.78× for square pairs, 4096×608×8192
        // 0.96× against 0.85×, 12288×640×4096 0.99× against 0.92×, 600×8192×8192 0.91× against
        // 0.77× for mid tiles, 640×16384×8192 0.96× against 0.85× for wide tiles); but where the
        // mid tile fits in three it stays (8192×576×8192: 0.89× against 0.84×).
        for (m, n, k) in [(8192, 600, 8192), (4096, 608, 8192), (12288, 640, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
        }
        for (m, n, k) in [(600, 8192, 8192), (640, 16384, 8192), (608, 12288, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk_cm", "{m}x{n}x{k}");
        }
        assert_eq!(name(8192, 576, 8192), "hopper_v7_mid_kk");
        // At M = 2048, twin pairs in four columns of pairs, one whole wave, where the trim tile
        // in four columns had beaten square and slim pairs (twenty-fifth session: 2048×640×4096
        // 1.00× against the trim tile's 0.91×, 640×2048×4096 0.98× against 0.88×); and split
        // (1536×448×8192, three columns, 0.85× against 0.77× for square pairs; 1152×600×8192,
        // four, not measured, from slim pairs).
        for (m, n, k) in [(2048, 520, 4096), (2048, 640, 4096), (1152, 600, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin80_kk", "{m}x{n}x{k}");
        }
        for (m, n, k) in [(600, 2048, 4096), (640, 2048, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin80_kk_cm", "{m}x{n}x{k}");
        }
        // Twin pairs 96 wide where lean tiles, whole, had won ties (4096×384×4096 1.00× against
        // 0.99×, 384×4096×4096 1.00× against 0.91×, 2048×768×4096 1.02× against 0.99×).
        for (m, n, k) in [(4096, 384, 4096), (2048, 768, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin96_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(384, 4096, 4096), "hopper_v7_twin96_kk_cm");
        // Ties between the lean tile and its column-major form go to the form whose M is the
        // shorter; the mid tile's keep the first entry (ninth session: 1536×1024×4096 and
        // 3072×512×4096 faster written column-major; twelfth: 3.6–8% at 4096×288…384×4096,
        // twin pairs' now; the mid tile's ties went both ways). Twin pairs would share the
        // smaller operand at 3072×512, six times smaller.
        assert_eq!(name(3072, 512, 4096), "hopper_v7_lean_kk_cm");
        // Where the other side is at most 1.5 times longer, twin pairs sharing the smaller
        // operand in one whole wave beat the lean tiles (twenty-seventh session: 1536×1024×4096
        // 0.99–1.00× cuBLAS against 0.94×).
        assert_eq!(name(1536, 1024, 4096), "hopper_v7_twin96_kk_cm");
        assert_eq!(name(1024, 1536, 4096), "hopper_v7_twin96_kk");
        assert_eq!(name(1024, 1536, 1024), "hopper_v7_lean_kk");
        assert_eq!(name(4096, 1536, 4096), "hopper_v7_mid_kk");
        // N from 129 to 224 where pairs of the twin tiles (tiles side by side along N, sharing A)
        // make at most a wave or need a split: A is the operand read from DRAM, and the pair
        // multicasts it (twenty-fourth session, forced: 8192×160×8192 1.00× cuBLAS against 0.88×
        // for the trim tile, 8192×192×8192 0.99× against 0.88× for lean tiles and 0.95× for mid
        // ones, 8192×208×8192 1.04× against 0.90× for square pairs).
        for (m, n, k, twin) in [
            (8192, 136, 8192, 80),
            (8192, 160, 8192, 80),
            (4096, 160, 4096, 80),
            (2048, 160, 8192, 80),
            (3000, 144, 8192, 80),
            (8192, 176, 8192, 96),
            (4096, 192, 4096, 96),
            (8192, 224, 8192, 112),
        ] {
            assert_eq!(name(m, n, k), format!("hopper_v7_twin{twin}_kk"), "{m}x{n}x{k}");
        }
        assert_eq!(name(224, 8192, 8192), "hopper_v7_twin112_kk_cm");
        // Where twin pairs take two waves, pairs along M of larger tiles take one (measured
        // against them: 16384×160×4096 0.99× for mid tiles trimmed to 160 columns against 0.97×,
        // 16384×152×8192 0.96× against 0.94×; thirteenth session against mid tiles:
        // 16384×144×4096 0.95× against 0.87×, 16384×160×5120 0.98× against 0.90×,
        // 160×28672×8192 0.94× against 0.85× written column-major). There is no twin pair 64
        // wide: it beat slim pairs at 8192×128×8192 (0.98× against 0.94×), but lost to lean
        // tiles written column-major, which share the streamed operand too, at 12288×128×4096
        // (0.89× against 1.02×), and to slim pairs at 128×128×8192 (0.45× against 0.55×).
        for (m, n, k) in [(16384, 144, 4096), (16384, 160, 5120), (32768, 144, 4096), (16384, 152, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
        }
        // 160×28672×8192 runs the twins in two waves since that price, whose whole wave no longer
        // pays for the split: 0.90× against 0.96×, a loss docs/performance.md records.
        assert_eq!(name(160, 16384, 5120), "hopper_v7_midtrim_kk_cm");
        assert_eq!(name(16384, 192, 4096), "hopper_v7_mid_kk");
        // At 14336 the two measured level (14336×160×4096 0.883–0.887 against 0.887–0.890,
        // 144×14336×4096 0.833 against 0.828); since the thirtieth session's split price, which
        // counts a wholly split path 10% longer, the model takes the mid tile trimmed, whole.
        assert_eq!(name(14336, 160, 4096), "hopper_v7_midtrim_kk");
        assert_eq!(name(144, 14336, 4096), "hopper_v7_midtrim_kk_cm");
        assert_eq!(name(8192, 128, 8192), "hopper_v7_slim_kk");
        assert_eq!(name(12288, 128, 4096), "hopper_v7_lean_kk_cm");
        // One row of twin pairs 112 wide at M ≤ 128, whole, where lean or square pairs split
        // (twenty-fifth session: 128×14336×4096 1.02× against 0.92×, 112×14336×4096 0.96×
        // against 0.87–0.89×, 14336×128×4096 1.00× against 0.90×, 128×28672×8192 1.00× against
        // 0.98×; 128×14336×1024 1.06× against whole slim pairs' 1.05×); not where lean pairs
        // make the same whole wave (128×12288×4096: 1.01× against 0.98× for twin96), nor split
        // (128×8192×8192, slim pairs above: 0.99× against twin112's 0.93×).
        for (m, n, k) in [(128, 14336, 4096), (112, 14336, 4096), (128, 28672, 8192), (128, 14336, 1024)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin112_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(14336, 128, 4096), "hopper_v7_twin112_kk_cm");
        // Also where square pairs run whole in one column, priced 2.3% below (twenty-ninth
        // session, forced, two rounds: 12800×128×2048 0.99× against 0.94×, 13056×128×1024 1.08×
        // against 1.03×, 14720×128×8192 0.93× against 0.92×).
        for (m, n, k) in [(12800, 128, 2048), (13056, 128, 1024), (14720, 128, 8192), (14336, 128, 2048)] {
            assert_eq!(name(m, n, k), "hopper_v7_twin112_kk_cm", "{m}x{n}x{k}");
        }
        assert_eq!(name(128, 12288, 4096), "hopper_v7_lean_kk");
        // N or M from 193 to 224 at large M or N: the wide tile trimmed to 224 columns, one
        // column of them, where wide tiles computed 256 (thirteenth session: 32768×224×4096 1.00×
        // against 0.86×, 16384×208×4096 0.93× against 0.83×, 208×14336×4096 0.86× against 0.80×
        // for mid tiles); at 8192 twin pairs (above).
        for (m, n, k) in [(16384, 208, 4096), (32768, 224, 4096), (16384, 200, 5120), (14336, 208, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
        }
        for (m, n, k) in [(208, 16384, 5120), (224, 28672, 8192), (208, 14336, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk_cm", "{m}x{n}x{k}");
        }
        assert_eq!(name(8192, 208, 8192), "hopper_v7_twin112_kk");
        // The 160-column tiles in many columns where they make one or two whole waves, and the
        // tile before split by K (twenty-sixth session, forced: 512×5120×8192 1.02× cuBLAS
        // against 0.92× for wide tiles, 1024×5120×5120 0.97× against 0.91×, 10240×256×4096
        // 0.98× against 0.83× for square pairs, 128×10240×4096 1.05× against 0.95× for slim
        // pairs, 256×5120×5120 0.96–0.98× against 0.88× for square pairs); not at K = 1024
        // (640×3072×1024: slim pairs 0.97–1.02× against 0.82–0.85×), nor in more waves
        // (3072×5120×5120: mid tiles 0.99× against 0.96–0.98×).
        for (m, n, k) in [(512, 5120, 8192), (1024, 5120, 5120), (2048, 1280, 8192), (512, 10240, 8192)] {
            assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(10240, 256, 4096), "hopper_v7_midtrim_kk_cm");
        for (m, n, k) in [(128, 10240, 4096), (256, 5120, 5120)] {
            assert_eq!(name(m, n, k), "hopper_v7_trim_kk", "{m}x{n}x{k}");
        }
        // At 1024×1280 twin pairs 80 wide share A in one whole wave (twenty-seventh session:
        // 0.97× cuBLAS against the trim tiles' 0.91×); at K = 1024 the trim tiles stay.
        assert_eq!(name(1024, 1280, 4096), "hopper_v7_twin80_kk");
        assert_eq!(name(1280, 1024, 8192), "hopper_v7_twin80_kk_cm");
        assert_eq!(name(640, 3072, 1024), "hopper_v7_slim_kk");
        // Where the pairs sharing the larger operand are priced as low, they keep the call
        // (twenty-eighth session: 1024×1152×4096 twin80 1.12–1.13× cuBLAS against 1.00–1.05×
        // sharing the smaller, 1024×1408×8192 twin96 0.95× against 0.92–0.93×).
        for (m, n, k, kernel) in [
            (1024, 1152, 4096, "twin80_kk_cm"),
            (1024, 1408, 8192, "twin96_kk_cm"),
            (1536, 1152, 4096, "twin112_kk_cm"),
        ] {
            assert_eq!(name(m, n, k), format!("hopper_v7_{kernel}"), "{m}x{n}x{k}");
        }
        // Square pairs split with fewer units than pairs give way to whole waves priced within 6%
        // of them (twenty-sixth session, forced: 3072×384×4096 trim tiles written column-major
        // 0.95× cuBLAS against 0.82×, 11008×128×4096 lean tiles written column-major 0.97×
        // against 0.85×, 256×4096×11008 slim pairs 1.02× against 0.93–0.97×, 13824×128×4096
        // twin pairs 0.97× against 0.89×), not to other splits (1024×1792×4096: mid tiles split
        // 0.78× against 0.84×).
        for (m, n, k, kernel) in [
            (3072, 384, 4096, "trim_kk_cm"),
            (11008, 128, 4096, "lean_kk_cm"),
            (256, 4096, 11008, "slim_kk"),
            (13824, 128, 4096, "twin112_kk_cm"),
        ] {
            assert_eq!(name(m, n, k), format!("hopper_v7_{kernel}"), "{m}x{n}x{k}");
        }
        assert_eq!(name(1024, 1792, 4096), "hopper_v7_square_kk");
        assert_eq!(name(3072, 5120, 5120), "hopper_v7_mid_kk");
        // The wide tile trimmed in five columns or more where it makes at most three whole waves
        // (twenty-seventh session, forced, two rounds: 512×7168×4096 1.00–1.03× cuBLAS against
        // mid tiles' 0.89×, 14336×256×4096 1.07× against 0.92–0.93×, 256×28672×4096 1.05×
        // against wide tiles split, 1.00×, 512×22016×4096 0.97× against 0.93×); not in more
        // waves (12288³), nor in fewer than two rows of tiles (14336×208×4096, one column above).
        for (m, n, k) in [(512, 7168, 4096), (256, 28672, 4096), (512, 22016, 4096), (1792, 6144, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(14336, 256, 4096), "hopper_v7_widetrim_kk_cm");
        assert_eq!(name(12288, 12288, 12288), "hopper_v7");
        // Except against whole waves of square pairs priced within 1% (twenty-eighth session:
        // 4864×2176×4096 square pairs 0.98× cuBLAS against 0.94–0.95×); against square pairs
        // split it stays (1536×2176×4096: 1.05× against 0.97×, twenty-seventh session).
        for (m, n, k) in [(4864, 2176, 4096), (5504, 1920, 8192), (3200, 3200, 4096)] {
            assert_eq!(name(m, n, k), "hopper_v7_square_kk", "{m}x{n}x{k}");
        }
        assert_eq!(name(1536, 2176, 4096), "hopper_v7_widetrim_kk");
        // A column-major C turns the same calls round: M = 160 is then the kernel's N.
        let col = GemmOp::new(160, 8192, 8192).c(Layout::ColMajor, 160);
        assert_eq!(choose(kernels.iter().copied(), &col, 132).unwrap().name, "hopper_v7_twin80_kk");
        // The trim tile takes several columns of tiles with alpha = 1 and beta = 0 only (its last
        // staging box shifted); the narrow tiles, narrower than a box, take one column always.
        let trim = kernels.iter().find(|s| s.name == "hopper_v7_trim_kk").unwrap();
        assert_eq!(supports(trim, &GemmOp::new(8192, 168, 64)), Ok(()));
        assert!(
            matches!(supports(trim, &GemmOp::new(8192, 168, 64).beta(1.0)), Err(Error::Unsupported { reason, .. }) if reason.contains("one column of tiles"))
        );
        assert_eq!(supports(trim, &GemmOp::new(8192, 160, 64).beta(1.0)), Ok(()));
        let narrow16 = kernels.iter().find(|s| s.name == "hopper_v7_narrow16_kk_cm").unwrap();
        assert!(
            matches!(supports(narrow16, &GemmOp::new(24, 4096, 64)), Err(Error::Unsupported { reason, .. }) if reason.contains("one column of tiles"))
        );
        assert_eq!(supports(trim, &GemmOp::new(8192, 160, 64)), Ok(()));
        // The entry that writes C column-major needs whole 16-byte chunks of it: not at N = 8190.
        let odd = GemmOp::new(160, 8190, 8192).c(Layout::RowMajor, 8192);
        let cm = kernels.iter().find(|s| s.name == "hopper_v7_lean_kk_cm").unwrap();
        assert!(
            matches!(supports(cm, &odd), Err(Error::Unsupported { reason, .. }) if reason.contains("multiples of 8"))
        );
        assert_eq!(choose(kernels.iter().copied(), &odd, 132).unwrap().name, "hopper_v7_square_kk");
        // A dense C whose rows are not 16-byte multiples, written row-major: stored from
        // registers. Written column-major, it is refused before any device call, with the
        // leading dimension named, and `auto` takes another entry.
        let wide = kernels.iter().find(|s| s.name == "hopper_v7_widetrim_kk").unwrap();
        let at = 1 << 20;
        let p = plan(wide, &GemmOp::new(1000, 1500, 4096), at, at, at).unwrap();
        assert_eq!(p.args.tma_store_columns(1500), 0);
        assert_eq!(p.args.tma_store_columns(1504), 0, "no column of such a C is TMA's");
        assert_eq!(plan(wide, &GemmOp::new(1000, 1504, 4096), at, at, at).unwrap().args.tma_store_columns(1504), 1504);
        let tall = GemmOp::new(160, 8192, 8192).c(Layout::RowMajor, 8196);
        assert!(
            matches!(supports(cm, &tall), Err(Error::Unsupported { reason, .. }) if reason.contains("leading dimension (8196)"))
        );
        assert!(!choose(kernels.iter().copied(), &tall, 132).unwrap().c_col_major);
        assert!(choose(kernels.iter().copied(), &GemmOp::new(160, 8192, 8192), 132).unwrap().c_col_major);
    }

    #[test]
    fn the_issue_sweep_keeps_its_measured_plans() {
        // The kernel and the stream-K split of each shape of the Hopper performance target, as
        // measured in the README's sweep: a change to the chooser or the schedule that moves one
        // of them has to be measured again.
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        let wide = [
            ((8192, 8192, 8192), true),
            ((4096, 4096, 4096), false),
            ((2048, 2048, 2048), false),
            ((16384, 16384, 16384), true),
            ((8192, 28672, 8192), true),
            ((8192, 8192, 28672), true),
            ((4096, 14336, 4096), true),
            ((8192, 1024, 8192), false),
            ((8000, 8000, 8000), true),
            ((6144, 6144, 6144), true),
            ((1024, 8192, 8192), false),
        ];
        for ((m, n, k), splits) in wide.into_iter().chain([((128, 8192, 8192), false)]) {
            let op = GemmOp::new(m, n, k);
            let s = choose(kernels.iter().copied(), &op, 132).unwrap();
            let expected = if m == 128 { (64, 128) } else { (128, 256) };
            assert_eq!((s.tile_m, s.tile_n), expected, "{m}x{n}x{k}");
            let sk = s.schedule(&op.shape_args(), 132 / s.cluster).unwrap();
            assert_eq!(sk.splits(), splits, "{m}x{n}x{k}: {sk:?}");
        }
    }

    #[test]
    fn thin_tiles_spread_every_unit() {
        // Decode-like calls, M of 1–64 and N = 28672: 448 thin tiles on 132 SMs, or 224 pairs of
        // narrow ones on 66 pairs. They split every unit (thin tiles: measured 1.3–3% faster than
        // two whole waves and the rest split); the wide tile keeps its whole waves.
        let kernels: Vec<&KernelSpec> = hgemm_kernels::kernels().collect();
        for (m, k, name, share) in [
            (1, 8192, "hopper_v7_narrow16_kk_cm", 435),
            (32, 4096, "hopper_v7_narrow32_kk_cm", 218),
            (64, 8192, "hopper_v7_thin_kk", 435),
        ] {
            let op = GemmOp::new(m, 28672, k);
            let s = choose(kernels.iter().copied(), &op, 132).unwrap();
            assert_eq!(s.name, name, "{m}x28672x{k}");
            let sk = s.schedule(&for_kernel(s, &op).0.shape_args(), 132 / s.cluster).unwrap();
            assert_eq!((sk.dp_units, sk.share), (0, share), "{m}x28672x{k}: {sk:?}");
        }
        let op = GemmOp::new(8192, 8192, 8192);
        let wide = choose(kernels.iter().copied(), &op, 132).unwrap();
        assert_eq!(wide.schedule(&op.shape_args(), 66).unwrap().dp_units, 14 * 66);
    }
}
