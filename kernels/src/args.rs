//! The kernel parameters every GEMM entry point takes, in this order:
//! `(a: TensorMapParam, b: TensorMapParam, c: TensorMapParam, args: GemmArgs)`.

/// A `CUtensorMap` passed by value, as nvcc's `__grid_constant__` does. The driver wants it
/// 64-byte aligned in parameter space; rustc declares it `.align 16` (it cannot express more for a
/// parameter), so the PTX build (`tools/ptxgen`) raises the alignment in the PTX text. Device code never reads the
/// fields: it takes the parameter's address (`ptx::param::tensor_map!`) and hands that to TMA.
#[repr(C, align(16))]
pub struct TensorMapParam(pub [u64; 16]);

/// The problem: C (M×N) = alpha · A (M×K) · Bᵀ (B is N×K) + beta · C, for `batch` GEMMs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmArgs {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// GEMMs in a strided batch; 1 for one GEMM.
    pub batch: u32,
    /// Device address of C, for epilogues that store with plain instructions.
    pub c: u64,
    /// Row stride of C and the distance between batch entries of C, in elements.
    pub ldc: u64,
    pub stride_c: u64,
    pub alpha: f32,
    pub beta: f32,
    /// Device address of the stream-K workspace ([`crate::sched::Workspace`]); 0 forbids the
    /// kernel to split tiles (every tile is then computed whole).
    pub workspace: u64,
    /// With a workspace, the split the host chose ([`crate::sched::StreamK::new`]) for this
    /// grid: the units computed whole, then each worker's share of the rest in K blocks (never
    /// 0: the host passes a workspace only to launches that split). The kernel walks it as
    /// given, so a change to how the host chooses leaves the kernel's code as it was.
    pub dp_units: u32,
    pub share: u32,
    /// The fused epilogue ([`crate::fused`]): bias, activation, gating.
    pub epilogue: crate::fused::Epilogue,
    /// Device address of the bias vector (over the output's N columns; for a gated call over its
    /// 2·I interleaved columns); 0 without a bias.
    pub bias: u64,
    /// Elements between the bias vectors of consecutive batch entries; 0 shares one vector.
    pub bias_stride: u64,
}

impl GemmArgs {
    /// Columns of C, of the `contiguous` along its rows (N, or M for a column-major C), that TMA
    /// stores write ([`crate::staging::tma_store_columns`]): none where C's address or strides are
    /// not ones TMA can write. Kernel and host both ask this.
    #[inline(always)]
    pub const fn tma_store_columns(&self, contiguous: u32) -> u32 {
        use crate::staging::{tma_can_write, tma_store_columns};
        tma_store_columns(contiguous, tma_can_write(self.c, self.ldc, self.stride_c, self.batch))
    }

    /// A single GEMM, C = A·Bᵀ, C dense (`ldc == n`).
    pub const fn new(m: u32, n: u32, k: u32, c: u64) -> Self {
        GemmArgs {
            m,
            n,
            k,
            batch: 1,
            c,
            ldc: n as u64,
            stride_c: m as u64 * n as u64,
            alpha: 1.0,
            beta: 0.0,
            workspace: 0,
            dp_units: 0,
            share: 0,
            epilogue: crate::fused::Epilogue::NONE,
            bias: 0,
            bias_stride: 0,
        }
    }
}
