//! The call: what to compute ([`GemmOp`], [`Layout`]) and every check of it that needs neither a
//! kernel nor a GPU. Plain data; the launch plan ([`crate::plan`]) and `auto`'s choice
//! ([`crate::choose`]) build on it.

use crate::error::{Error, Result};
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::fused::{Activation, BiasType, Epilogue, GLU_BLOCK};
use hgemm_kernels::spec::Major;

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
    /// The type of the bias vector the call adds before its activation ([`GemmOp::bias`]), if
    /// any; the buffer is passed to [`Gemm::gemm_bias`](crate::Gemm::gemm_bias).
    pub bias: Option<BiasType>,
    /// Elements between the bias vectors of consecutive batch entries; 0 (the default) shares one
    /// vector across the batch.
    pub bias_stride: usize,
    /// The activation applied after alpha and the bias, before beta·C.
    pub activation: Activation,
    /// A gated call ([`GemmOp::gated`]): B's N columns are gate and up projections interleaved
    /// in blocks of 8, and C has N/2 columns.
    pub gated: bool,
    /// The most SMs the call may use ([`GemmOp::max_sms`]); `None` (the default) leaves it every
    /// SM of the device.
    pub max_sms: Option<u32>,
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
            bias: None,
            bias_stride: 0,
            activation: Activation::Identity,
            gated: false,
            max_sms: None,
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

    /// C's storage order and leading dimension (C is M×N; M×N/2 for a gated call).
    pub fn c(self, layout: Layout, ld: usize) -> GemmOp {
        GemmOp {
            c_layout: layout,
            ldc: ld,
            stride_c: self.dense_stride(self.stride_c, layout, self.m, self.out_n(), ld),
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

    /// Add a bias vector of type `ty` before the activation: `y = act(alpha·A·B + bias) + beta·C`,
    /// computed in f32 with one rounding to bf16. The bias runs over the GEMM's N columns (for a
    /// gated call over all N = 2·I interleaved ones); its buffer is passed to
    /// [`Gemm::gemm_bias`](crate::Gemm::gemm_bias).
    pub fn bias(self, ty: BiasType) -> GemmOp {
        GemmOp { bias: Some(ty), ..self }
    }

    /// A batch whose entries each have their own bias vector, `stride` elements apart (0 shares
    /// one vector, the default).
    pub fn bias_stride(self, stride: usize) -> GemmOp {
        GemmOp { bias_stride: stride, ..self }
    }

    /// Apply `act` to each element after alpha and the bias, before beta·C (beta is the
    /// residual add; cuBLASLt adds beta·C before its activation: the two agree where beta is 0).
    pub fn activation(self, act: Activation) -> GemmOp {
        GemmOp { activation: act, ..self }
    }

    /// A gated linear unit: B's N = 2·I columns are the gate and up projections interleaved in
    /// blocks of 8 columns ([`interleave_gate_up`](crate::interleave_gate_up) builds that
    /// layout), and the call writes the M×I output `act(gate)·up` (with alpha and the bias
    /// applied to both; SwiGLU with [`Activation::Silu`], GeGLU with a GELU). C then has N/2
    /// columns: its leading dimension and batch stride are set with [`GemmOp::c`] and
    /// [`GemmOp::batched`] after this call, or given explicitly. N must be a multiple of 16.
    pub fn gated(self) -> GemmOp {
        let op = GemmOp { gated: true, ..self };
        let (rows, cols) = (op.m, op.out_n());
        let ldc = if op.c_layout == Layout::RowMajor { cols } else { rows };
        GemmOp { ldc, stride_c: op.dense_stride(op.stride_c, op.c_layout, rows, cols, ldc), ..op }
    }

    /// Run on at most `sms` SMs, leaving the rest to kernels on other streams (an all-reduce
    /// beside the GEMM, say): a persistent entry launches at most `sms` CTAs (whole clusters) and
    /// splits its tiles by K among that many workers. Entries that launch one CTA per tile cannot
    /// keep a budget: `auto` leaves them out, and pinning one is [`Error::SmBudget`]; so is a
    /// budget of 0, or one smaller than a pinned entry's cluster. A grid the budget holds is not
    /// launched as a programmatic dependent (its CTAs would start on the SMs left free while the
    /// previous kernel's still run). A budget at or above the device's SM count changes nothing.
    pub fn max_sms(self, sms: u32) -> GemmOp {
        GemmOp { max_sms: Some(sms), ..self }
    }

    /// The call with the tighter of its own budget and `budget` (a handle's,
    /// [`Gemm::set_max_sms`](crate::Gemm::set_max_sms)).
    pub fn within(self, budget: Option<u32>) -> GemmOp {
        let max_sms = match (self.max_sms, budget) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        GemmOp { max_sms, ..self }
    }

    /// The call on a device of `sms` SMs: without its budget where that covers every SM.
    pub fn on_device(self, sms: u32) -> GemmOp {
        GemmOp { max_sms: self.max_sms.filter(|&b| b < sms), ..self }
    }

    /// The SMs the call may use on a device of `sms` SMs: its budget, capped at the device.
    pub fn sms_on(&self, sms: u32) -> u32 {
        self.max_sms.map_or(sms, |b| b.min(sms))
    }

    /// Columns of C: N, or N/2 for a gated call.
    pub fn out_n(&self) -> usize {
        if self.gated { self.n / 2 } else { self.n }
    }

    /// The fused epilogue as the kernels take it (without [`Epilogue::along_m`], which the plan
    /// sets for entries that compute Cᵀ).
    pub fn epilogue(&self) -> Epilogue {
        let e = Epilogue::NONE.with_activation(self.activation);
        let e = match self.bias {
            Some(ty) => e.with_bias(ty),
            None => e,
        };
        if self.gated { e.gated() } else { e }
    }

    /// Whether the call has a fused epilogue (a bias, an activation or gating) beyond alpha and beta.
    pub fn fused(&self) -> bool {
        !self.epilogue().is_none()
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
        if self.max_sms == Some(0) {
            return Err(Error::SmBudget {
                kernel: "any kernel",
                max_sms: 0,
                reason: "a budget of 0 SMs leaves nothing to run on".into(),
            });
        }
        if self.m == 0 || self.n == 0 || self.batch == 0 {
            return Ok(false);
        }
        self.validate_epilogue()?;
        let c = Self::needed("C", self.c_layout, self.m, self.out_n(), self.ldc, self.batch, self.stride_c)?;
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

    /// The fused epilogue's checks that need no buffer: a gated call's N.
    fn validate_epilogue(&self) -> Result<()> {
        let block = 2 * GLU_BLOCK as usize;
        if self.gated && !self.n.is_multiple_of(block) {
            return Err(Error::InvalidShape(format!(
                "gated call with N = {}: N holds gate and up columns interleaved in blocks of {GLU_BLOCK}, so it must be a multiple of {block}",
                self.n
            )));
        }
        // The kernels may load each batch entry's bias for 8 columns with one 16-byte load.
        let per_16_bytes = match self.bias {
            Some(BiasType::Bf16) => 8,
            Some(BiasType::F32) => 4,
            None => 1,
        };
        if !self.bias_stride.is_multiple_of(per_16_bytes) {
            return Err(Error::InvalidShape(format!(
                "bias_stride = {} is not a multiple of {per_16_bytes} elements: each batch entry's bias must start 16-byte aligned",
                self.bias_stride
            )));
        }
        Ok(())
    }

    /// Elements the bias buffer must hold: N (the GEMM's, 2·I for a gated call), and with a
    /// [`bias_stride`](GemmOp::bias_stride), every batch entry's vector.
    pub fn bias_len(&self) -> Result<usize> {
        (self.batch.max(1) - 1).checked_mul(self.bias_stride).and_then(|x| x.checked_add(self.n)).ok_or_else(|| {
            Error::InvalidShape(format!(
                "the bias spans more than 2^64 elements ({} vectors {} apart)",
                self.batch, self.bias_stride
            ))
        })
    }

    /// [`validate`](Self::validate) with the bias buffer given (its type and length) or not:
    /// every check of [`validate`](Self::validate), then the bias's presence, type and length.
    pub fn validate_fused(
        &self,
        len_a: usize,
        len_b: usize,
        bias: Option<(BiasType, usize)>,
        len_c: usize,
    ) -> Result<bool> {
        let work = self.validate(len_a, len_b, len_c)?;
        let given = bias.map(|(ty, _)| ty);
        if self.bias != given {
            return Err(Error::Bias { op: self.bias, buffer: given });
        }
        if let Some((_, len)) = bias
            && work
        {
            let needed = self.bias_len()?;
            if len < needed {
                return Err(Error::BufferTooSmall { operand: "bias", needed, len });
            }
        }
        Ok(work)
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
            && !self.fused()
    }

    /// Whether alpha = 1, beta = 0 and nothing is fused: the call as v6's epilogue stores it, and
    /// as tuning tables key it.
    pub fn plain_epilogue(&self) -> bool {
        self.alpha == 1.0 && self.beta == 0.0 && !self.fused()
    }

    /// Whether v7 stores this call's tiles so that trimmed tiles may sit side by side
    /// ([`KernelSpec::takes_one_column`](hgemm_kernels::spec::KernelSpec::takes_one_column)):
    /// beta = 0, and alpha = 1 or a fused epilogue, whose pass applies alpha in the accumulator
    /// before v6's epilogue (which shifts the last staging box back) or the gated threads' exact
    /// stores. Only the epilogue that reads C for beta, or scales by alpha as it stages, stores
    /// whole boxes past a trimmed tile.
    pub fn side_by_side_epilogue(&self) -> bool {
        self.beta == 0.0 && (self.alpha == 1.0 || self.fused())
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn fused_epilogue_checks() {
        let (m, n, k) = (64, 256, 64);
        let op = GemmOp::new(m, n, k).bias(BiasType::F32).activation(Activation::Relu);
        assert!(op.fused() && !op.is_native() && !op.plain_epilogue());
        let lens = (m * k, n * k, m * n);
        let check = |op: &GemmOp, bias| op.validate_fused(lens.0, lens.1, bias, lens.2);
        assert_eq!(check(&op, Some((BiasType::F32, n))), Ok(true));
        // Declared and passed must agree: present, absent, type.
        assert_eq!(check(&op, None), Err(Error::Bias { op: Some(BiasType::F32), buffer: None }));
        let plain = GemmOp::new(m, n, k);
        assert_eq!(
            check(&plain, Some((BiasType::Bf16, n))),
            Err(Error::Bias { op: None, buffer: Some(BiasType::Bf16) })
        );
        assert_eq!(
            check(&op, Some((BiasType::Bf16, n))),
            Err(Error::Bias { op: Some(BiasType::F32), buffer: Some(BiasType::Bf16) })
        );
        assert_eq!(
            check(&op, Some((BiasType::F32, n - 1))),
            Err(Error::BufferTooSmall { operand: "bias", needed: n, len: n - 1 })
        );
        // An activation alone needs no buffer.
        assert_eq!(check(&plain.activation(Activation::Silu), None), Ok(true));
        // Per-entry vectors: (batch - 1)·stride + N; the stride keeps each 16-byte aligned.
        let b = GemmOp::new(m, n, k).bias(BiasType::Bf16).batched(3, m * k, n * k, m * n).bias_stride(264);
        assert_eq!(b.bias_len(), Ok(2 * 264 + n));
        assert_eq!(
            b.validate_fused(3 * m * k, 3 * n * k, Some((BiasType::Bf16, 2 * 264 + n - 1)), 3 * m * n),
            Err(Error::BufferTooSmall { operand: "bias", needed: 2 * 264 + n, len: 2 * 264 + n - 1 })
        );
        assert!(
            matches!(b.bias_stride(260).validate_shape(), Err(Error::InvalidShape(s)) if s.contains("bias_stride"))
        );
        assert!(b.bias(BiasType::F32).bias_stride(260).validate_shape().is_ok());
    }

    #[test]
    fn gated_calls_write_half_the_columns() {
        let op = GemmOp::new(100, 512, 64).activation(Activation::Silu).gated();
        assert_eq!((op.out_n(), op.ldc, op.stride_c), (256, 256, 100 * 256));
        assert!(op.epilogue().is_gated());
        // C holds M×N/2: one element fewer fails, N/2 rows' worth is enough.
        assert_eq!(op.validate(100 * 64, 512 * 64, 100 * 256), Ok(true));
        assert_eq!(
            op.validate(100 * 64, 512 * 64, 100 * 256 - 1),
            Err(Error::BufferTooSmall { operand: "C", needed: 100 * 256, len: 100 * 256 - 1 })
        );
        // A leading dimension set for the GEMM's N is wider than needed; one below N/2 is refused.
        assert_eq!(
            op.c(Layout::RowMajor, 200).validate_shape(),
            Err(Error::LeadingDimension { operand: "C", ld: 200, min: 256 })
        );
        assert_eq!(op.c(Layout::ColMajor, 100).stride_c, 256 * 100);
        // N must hold whole blocks of 8 gate and 8 up columns.
        for n in [24, 516, 7] {
            assert!(
                matches!(GemmOp::new(64, n, 64).gated().validate_shape(), Err(Error::InvalidShape(s)) if s.contains("multiple of 16")),
                "N {n}"
            );
        }
        // The packed epilogue: activation, bias, gating; along M only from the plan.
        let e = GemmOp::new(64, 64, 64).bias(BiasType::Bf16).activation(Activation::GeluErf).gated().epilogue();
        assert_eq!(
            (e.activation(), e.bias(), e.is_gated(), e.is_along_m()),
            (Activation::GeluErf, Some(BiasType::Bf16), true, false)
        );
    }
}
