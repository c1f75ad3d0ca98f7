//! Epilogue pieces: C in global memory for the stores from registers both families make, and
//! the partial sums stream-K (Hopper v7, Blackwell's library entry) hands from one worker to the
//! next.
use crate::args::GemmArgs;
use crate::ptx::cvt;
#[cfg(any(hopper, blackwell, hang_guard))]
use crate::ptx::global;
#[cfg(hopper)]
use crate::ptx::shfl;

/// C (or one batch entry of it) in global memory, for epilogues that store from registers.
#[derive(Clone, Copy)]
pub struct Output {
    base: u64,
    ldc: u64,
    m: u32,
    n: u32,
}

impl Output {
    /// Batch entry `z` of the C that `args` describes.
    #[inline(always)]
    pub fn new(args: &GemmArgs, z: u32) -> Output {
        Output { base: args.c + 2 * z as u64 * args.stride_c, ldc: args.ldc, m: args.m, n: args.n }
    }

    /// Address of `C[row][col]`.
    #[inline(always)]
    fn at(&self, row: u32, col: u32) -> u64 {
        self.base + 2 * (row as u64 * self.ldc + col as u64)
    }

    /// Whether a pair at even `col` may move as one aligned 4-byte word: N and the row stride
    /// even and the matrix 4-byte aligned (rows then start at even elements, on words).
    /// Otherwise element by element.
    #[inline(always)]
    fn paired(&self) -> bool {
        self.n.is_multiple_of(2) && self.ldc.is_multiple_of(2) && self.base.is_multiple_of(4)
    }

    /// Store `C[row][col]` and `C[row][col + 1]` as bf16 (`col` even), skipping what lies outside
    /// the M×N output.
    #[inline(always)]
    pub fn store_pair(&self, row: u32, col: u32, lo: f32, hi: f32) {
        if row < self.m && col < self.n {
            self.write_packed(row, col, cvt::rn_bf16x2_f32(lo, hi));
        }
    }

    /// The store of a pair within the output.
    #[inline(always)]
    fn write_packed(&self, row: u32, col: u32, packed: u32) {
        let at = self.at(row, col);
        unsafe {
            if self.paired() {
                (at as *mut u32).write(packed);
            } else {
                (at as *mut u16).write(packed as u16);
                if col + 1 < self.n {
                    ((at + 2) as *mut u16).write((packed >> 16) as u16);
                }
            }
        }
    }

    /// `C[row][col]` and `C[row][col + 1]` as f32 (zero outside the output), for beta.
    #[inline(always)]
    pub fn load_pair(&self, row: u32, col: u32) -> (f32, f32) {
        bf16x2_to_f32(self.load_packed(row, col))
    }

    /// [`store_pair`](Self::store_pair) of a pair already packed as bf16.
    #[cfg(blackwell)]
    #[inline(always)]
    pub fn store_packed(&self, row: u32, col: u32, packed: u32) {
        if row < self.m && col < self.n {
            self.write_packed(row, col, packed);
        }
    }

    /// `C[row][col]` and `C[row][col + 1]` packed as bf16 (zero outside the output), for beta.
    #[inline(always)]
    pub fn load_packed(&self, row: u32, col: u32) -> u32 {
        if row >= self.m || col >= self.n {
            return 0;
        }
        let at = self.at(row, col);
        unsafe {
            if self.paired() {
                (at as *const u32).read()
            } else {
                let lo = (at as *const u16).read() as u32;
                let hi = if col + 1 < self.n { ((at + 2) as *const u16).read() as u32 } else { 0 };
                lo | hi << 16
            }
        }
    }

    /// Store the first `width` columns (even) of a warpgroup's staged 64×64 box, whose element
    /// (0, 0) is `C[row0][col0]`, to C where TMA cannot write it
    /// ([`crate::staging::tma_can_write`]), skipping what lies outside the output: warp `warp`
    /// moves rows 16·warp to 16·warp + 15, lane `lane` the pair at columns 2·lane and 2·lane + 1
    /// of each, so that a warp's store covers 128 contiguous bytes of one row. The fragment's own
    /// stores, four lanes to a row, cover 16 bytes of each of eight rows: on the H200,
    /// 4096×50257×4096 ran at 0.84 of the speed of the same call with N = 50264 with those,
    /// 0.91–0.93 with these. (The last box of a tile 160 wide reaches past it: what lies beyond is the next
    /// tile's.) After a barrier that makes the warpgroup's staging stores visible.
    #[cfg(hopper)]
    #[inline(always)]
    pub fn store_box(&self, buf: crate::staging::Staging, warp: u32, lane: u32, row0: u32, col0: u32, width: u32) {
        let (row, col) = (row0 + 16 * warp, col0 + 2 * lane);
        if 2 * lane < width && col < self.n {
            for r in 0..self.m.saturating_sub(row).min(16) {
                self.write_packed(row + r, col, buf.load_b32(16 * warp + r, 2 * lane));
            }
        }
    }

    /// The box [`store_box`](Self::store_box) stores, loaded from C into `buf` (zeros outside
    /// the output), for beta where TMA cannot read C; a barrier must follow before any other
    /// thread reads the box.
    #[cfg(hopper)]
    #[inline(always)]
    pub fn load_box(&self, buf: crate::staging::Staging, warp: u32, lane: u32, row0: u32, col0: u32) {
        for r in 0..16 {
            let row = 16 * warp + r;
            buf.store_b32(row, 2 * lane, self.load_packed(row0 + row, col0 + 2 * lane));
        }
    }
}

/// The output of a gated call ([`crate::fused`]) for one batch entry: the kernel's M×N with N
/// (or M, along M) halved, row-major or, for entries that write C column-major, column-major;
/// stored from registers.
#[cfg(any(hopper, blackwell))]
#[derive(Clone, Copy)]
pub struct GatedOutput {
    /// Row-major: the output itself; column-major: its transpose.
    out: Output,
    col_major: bool,
}

#[cfg(any(hopper, blackwell))]
impl GatedOutput {
    /// Batch entry `z` of the gated output of `args` with epilogue `e` (`args`'s, as the kernel
    /// read it), column-major for `col_major`.
    #[inline(always)]
    pub fn new(args: &GemmArgs, e: crate::fused::Epilogue, z: u32, col_major: bool) -> GatedOutput {
        // Read per tile (`b32_opaque`), as `Fused::new` does.
        let (m, n) = (crate::ptx::mov::b32_opaque(args.m), crate::ptx::mov::b32_opaque(args.n));
        let (m, n) = if e.is_along_m() { (m / 2, n) } else { (m, n / 2) };
        let mut out = Output::new(args, z);
        (out.m, out.n) = if col_major { (n, m) } else { (m, n) };
        GatedOutput { out, col_major }
    }

    /// Store the output's (`row`, `col`) and (`row`, `col + 1`) as bf16 (`col` even), skipping
    /// what lies outside it.
    #[inline(always)]
    pub fn store_pair(&self, row: u32, col: u32, lo: f32, hi: f32) {
        if !self.col_major {
            self.out.store_pair(row, col, lo, hi);
        } else if col < self.out.m && row < self.out.n {
            let packed = cvt::rn_bf16x2_f32(lo, hi);
            unsafe { (self.out.at(col, row) as *mut u16).write(packed as u16) };
            if col + 1 < self.out.m {
                unsafe { (self.out.at(col + 1, row) as *mut u16).write((packed >> 16) as u16) };
            }
        }
    }

    /// The output's (`row`, `col`) and (`row`, `col + 1`) as f32 (zero outside), for beta.
    #[inline(always)]
    pub fn load_pair(&self, row: u32, col: u32) -> (f32, f32) {
        if !self.col_major {
            return self.out.load_pair(row, col);
        }
        let one = |r: u32, c: u32| {
            if r < self.out.m && c < self.out.n {
                f32::from_bits((unsafe { (self.out.at(r, c) as *const u16).read() } as u32) << 16)
            } else {
                0.0
            }
        };
        (one(col, row), one(col + 1, row))
    }
}

/// The fused epilogue's first step ([`crate::fused`]) for one batch entry: `alpha·acc + bias`,
/// the pre-activation (each of a gated call's gate and up values).
#[cfg(any(hopper, blackwell))]
#[cfg_attr(not(hopper), allow(dead_code))]
#[derive(Clone, Copy)]
pub struct Fused {
    alpha: f32,
    /// The entry's bias vector, 0 without one.
    bias: u64,
    bias_f32: bool,
    along_m: bool,
    /// Elements of the bias: the kernel's N, or its M along M.
    len: u32,
}

#[cfg(any(hopper, blackwell))]
impl Fused {
    /// Batch entry `z` of the epilogue `e` (`args`'s, as the kernel read it) for `args`.
    #[inline(always)]
    pub fn new(args: &GemmArgs, e: crate::fused::Epilogue, z: u32) -> Fused {
        let bias_f32 = matches!(e.bias(), Some(crate::fused::BiasType::F32));
        let bias = match e.bias() {
            None => 0,
            // The element size read per tile (`b32_opaque`): the stride times each size, hoisted
            // out of the tile loop, would hold registers through the K loop.
            Some(_) => {
                args.bias
                    + z as u64 * args.bias_stride * crate::ptx::mov::b32_opaque(if bias_f32 { 4 } else { 2 }) as u64
            }
        };
        let along_m = e.is_along_m();
        Fused {
            alpha: args.alpha,
            bias,
            bias_f32,
            along_m,
            // Per tile (`b32_opaque`): values derived from it are not hoisted out of the tile loop.
            len: crate::ptx::mov::b32_opaque(if along_m { args.m } else { args.n }),
        }
    }

    /// Whether the bias runs along the kernel's M (an entry computing Cᵀ).
    #[cfg(blackwell)]
    #[inline(always)]
    pub fn along_m(&self) -> bool {
        self.along_m
    }

    /// Bias element `i` (0 without a bias), 0 past the vector's end: a select, not a branch (the
    /// last element is loaded instead).
    #[cfg(blackwell)]
    #[inline(always)]
    pub fn bias_or_zero(&self, i: u32) -> f32 {
        if self.bias == 0 { 0.0 } else { self.bias_at(i) }
    }

    /// Bias element `i`, 0 past the vector's end: a select, not a branch (the last element is
    /// loaded instead).
    #[inline(always)]
    fn bias_at(&self, i: u32) -> f32 {
        let at = i.min(self.len.saturating_sub(1)) as u64;
        let b = if self.bias_f32 {
            f32::from_bits(global::ld_nc_b32(self.bias + 4 * at))
        } else {
            f32::from_bits((global::ld_nc_b16(self.bias + 2 * at) as u32) << 16)
        };
        if i < self.len { b } else { 0.0 }
    }

    /// `alpha·acc + bias` in place in a warpgroup's accumulator fragment, of which this thread
    /// (`lane` of its warp) holds pair 0 at the kernel's (`row0`, `col0`) (`Fragment`'s layout:
    /// pair p at row `row0 + 8·(p % 2)`, columns `col0 + 8·(p / 2)` and the next). Along M a
    /// thread needs two bias values; along N, each lane loads one of every 32 columns and the
    /// warp shuffles them: a load per pair kept ptxas's registers past their bound.
    #[cfg(hopper)]
    #[inline(always)]
    pub fn pre_activation<F: crate::ptx::wgmma::Fragment>(&self, acc: &mut F, row0: u32, col0: u32, lane: u32) {
        let a = self.alpha;
        if self.bias == 0 {
            acc.map_pairs(|_, lo, hi| (a * lo, a * hi));
        } else if self.along_m {
            let b = [self.bias_at(row0), self.bias_at(row0 + 8)];
            acc.map_pairs(|p, lo, hi| (a * lo + b[(p % 2) as usize], a * hi + b[(p % 2) as usize]));
        } else if self.bias_f32 {
            self.bias_along_n::<true, F>(acc, col0, lane);
        } else {
            self.bias_along_n::<false, F>(acc, col0, lane);
        }
    }

    /// [`pre_activation`](Self::pre_activation) with a bias along N, f32 (`F32`) or bf16: each
    /// lane loads one of every 32 columns, with one base address and constant offsets, and the
    /// warp shuffles them to the lanes that hold them.
    #[cfg(hopper)]
    #[inline(always)]
    fn bias_along_n<const F32: bool, F: crate::ptx::wgmma::Fragment>(&self, acc: &mut F, col0: u32, lane: u32) {
        let a = self.alpha;
        // The lane read anew (`b32_opaque`): the eight source lanes, computed once before the
        // tile loop, would stay live through the K loop.
        let lane = crate::ptx::mov::b32_opaque(lane);
        // Pairs 8q to 8q + 7 span the 32 columns from `first + 32q`; this lane loads column
        // `first + 32q + lane`.
        let first = col0 - 2 * (lane % 4) + lane;
        let size = if F32 { 4 } else { 2 };
        let base = self.bias + size * first as u64;
        let mut mine = 0u32;
        acc.map_pairs(|p, lo, hi| {
            if p % 8 == 0 {
                let at = base + size * 4 * p as u64;
                mine = match (first + 4 * p < self.len, F32) {
                    (false, _) => 0,
                    (true, true) => global::ld_nc_b32(at),
                    (true, false) => (global::ld_nc_b16(at) as u32) << 16,
                };
            }
            let from = 8 * ((p / 2) % 4) + 2 * (lane % 4);
            let (b_lo, b_hi) = (shfl::sync_idx_b32(mine, from), shfl::sync_idx_b32(mine, from + 1));
            (a * lo + f32::from_bits(b_lo), a * hi + f32::from_bits(b_hi))
        });
    }
}

/// The two f32 of a packed bf16 pair (`lo` from the low half): a bf16 is the top half of an f32.
#[inline(always)]
pub fn bf16x2_to_f32(packed: u32) -> (f32, f32) {
    (f32::from_bits(packed << 16), f32::from_bits(packed & 0xffff_0000))
}

/// A warpgroup's partial tile in the stream-K workspace ([`crate::sched::Workspace`]) and its
/// ready flag. The sums are moved by the accumulator fragment itself, laid out as it holds them
/// (`wgmma::Fragment::st_global_pairs`).
///
/// The hand-over is CUTLASS's `GenericBarrier` pattern (cutlass/barrier.h): the writers store,
/// meet at their warpgroup barrier, and one thread releases the flag; on the other side one
/// thread acquires it, and the warpgroup barrier after that lets every thread read.
///
/// Hopper v7's and Blackwell's library entry's stream-K, and the hang guard's test of a flag
/// nobody publishes.
#[cfg(any(hopper, blackwell, hang_guard))]
#[derive(Clone, Copy)]
pub struct Partial {
    pub sums: u64,
    pub flag: u64,
}

#[cfg(any(hopper, blackwell, hang_guard))]
impl Partial {
    /// After every thread's stores and a warpgroup barrier: one thread marks the sums ready.
    #[inline(always)]
    pub fn publish(&self) {
        global::st_release_gpu_u32(self.flag, 1);
    }

    /// One thread waits until the sums are ready; a warpgroup barrier must follow the wait.
    /// Built with `--cfg hang_guard`, the wait gives up after [`crate::hang::LIMIT_NS`] and
    /// reports the flag instead of hanging.
    #[inline(always)]
    pub fn wait(&self) {
        #[cfg(not(hang_guard))]
        while global::ld_acquire_gpu_u32(self.flag) == 0 {}
        #[cfg(hang_guard)]
        crate::hang::spin_flag_bounded(self.flag);
    }

    /// Ready for the next launch (which starts after this one ends); each partial is read once.
    #[inline(always)]
    pub fn clear(&self) {
        global::st_relaxed_gpu_u32(self.flag, 0);
    }
}
