//! Which calls to test a kernel on: a seeded random sweep of shapes and layouts, and a few small
//! cases for runs under compute-sanitizer. Plain Rust, checked without a GPU by the unit tests.

use crate::lengths;
use hgemm::{GemmOp, Layout};
use hgemm_kernels::spec::{KernelSpec, Major};

/// SplitMix64: a tiny seeded generator, so that a sweep is reproduced from its seed alone.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// Log-uniform in `lo..=hi` (`lo` ≥ 1): small and large sizes alike.
    pub fn log_range(&mut self, lo: usize, hi: usize) -> usize {
        let (l, h) = ((lo as f64).ln(), ((hi + 1) as f64).ln());
        ((l + self.unit() * (h - l)).exp() as usize).clamp(lo, hi)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// One of `xs`, uniformly.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.range(0, xs.len() - 1)]
    }
}

/// The options of a general call beyond its shape: C's storage order, how far each leading
/// dimension exceeds the least TMA allows (elements, multiples of 8), alpha, beta, a strided
/// batch with gaps between entries (elements, multiples of 8), and whether C is ragged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    /// Storage order of C.
    pub c_layout: Layout,
    /// Extra leading dimension of A, B, C.
    pub pad: [usize; 3],
    /// Scale of A·B.
    pub alpha: f32,
    /// Scale of the old C.
    pub beta: f32,
    /// GEMMs in the batch.
    pub batch: usize,
    /// Extra distance between batch entries of A, B, C.
    pub gap: [usize; 3],
    /// C's leading dimension is its row length plus `pad[2]`, not rounded up to 8 first, and its
    /// batch entries one element further apart than `gap[2]` says: a C that TMA cannot write,
    /// which only the entries that store any C take ([`KernelSpec::stores_any_c`]).
    pub ragged_c: bool,
}

impl Variant {
    /// Row-major C, no padding, alpha 1, beta 0, one GEMM.
    pub const PLAIN: Variant = Variant {
        c_layout: Layout::RowMajor,
        pad: [0; 3],
        alpha: 1.0,
        beta: 0.0,
        batch: 1,
        gap: [0; 3],
        ragged_c: false,
    };
    /// Everything at once: column-major C, padded, alpha and beta, a batch of two with gaps.
    pub const GENERAL: Variant = Variant {
        c_layout: Layout::ColMajor,
        pad: [8, 16, 8],
        alpha: -0.75,
        beta: 0.5,
        batch: 2,
        gap: [8, 16, 64],
        ragged_c: false,
    };
    /// [`Variant::GENERAL`] with a ragged C, its rows 3 elements longer than its row length.
    pub const RAGGED: Variant = Variant { pad: [8, 16, 3], ragged_c: true, ..Variant::GENERAL };
}

/// The dense single GEMM `kernel` computes: C = A·B with A and B in the storage orders it reads
/// (the native C = A·Bᵀ for the ladder).
/// An MN-major operand's leading dimension is M or N rounded up to 8 (TMA's 16-byte rows).
pub fn op_for(kernel: &KernelSpec, m: usize, n: usize, k: usize) -> GemmOp {
    // An entry that writes C column-major reads the caller's B as its A, and A as its B.
    let (a_major, b_major) = if swaps(kernel, Layout::RowMajor) {
        (kernel.b_major, kernel.a_major)
    } else {
        (kernel.a_major, kernel.b_major)
    };
    let op = GemmOp::new(m, n, k);
    let op = if a_major == Major::MN { op.a(Layout::ColMajor, m.div_ceil(8) * 8) } else { op };
    if b_major == Major::MN { op.b(Layout::RowMajor, n.div_ceil(8) * 8) } else { op }
}

/// The call `kernel` (a general one) computes for an M×N output with the options of `v`: A and B
/// stored so that, once a column-major C is turned into a row-major one (Cᵀ = Bᵀ·Aᵀ), the kernel
/// reads them in its own orders. Leading dimensions are the row length rounded up to 8 (TMA
/// moves 16-byte rows) plus the padding.
pub fn op_with(kernel: &KernelSpec, m: usize, n: usize, k: usize, v: &Variant) -> GemmOp {
    let up8 = |x: usize| x.div_ceil(8) * 8;
    let k_major = |major: Major| major == Major::K;
    // A (M×K) row-major is K-major; B (K×N) column-major is K-major. With C stored the other way
    // round than the kernel writes it the kernel's A is Bᵀ and its B is Aᵀ.
    let (a_row, b_col) = if swaps(kernel, v.c_layout) {
        (k_major(kernel.b_major), k_major(kernel.a_major))
    } else {
        (k_major(kernel.a_major), k_major(kernel.b_major))
    };
    let (a_layout, lda) = if a_row { (Layout::RowMajor, k + v.pad[0]) } else { (Layout::ColMajor, up8(m) + v.pad[0]) };
    let (b_layout, ldb) = if b_col { (Layout::ColMajor, k + v.pad[1]) } else { (Layout::RowMajor, up8(n) + v.pad[1]) };
    let c_row = match v.c_layout {
        Layout::RowMajor => n,
        Layout::ColMajor => m,
    };
    let ldc = if v.ragged_c { c_row } else { up8(c_row) } + v.pad[2];
    let op = GemmOp::new(m, n, k).a(a_layout, lda).b(b_layout, ldb).c(v.c_layout, ldc).alpha(v.alpha).beta(v.beta);
    if v.batch > 1 {
        let gap_c = v.gap[2] + v.ragged_c as usize;
        op.batched(v.batch, op.stride_a + v.gap[0], op.stride_b + v.gap[1], op.stride_c + gap_c)
    } else {
        op
    }
}

/// Whether a call with C stored `c_layout` reaches `kernel` as Cᵀ (its operands trading places):
/// when C is stored the other way round than the kernel writes it.
pub fn swaps(kernel: &KernelSpec, c_layout: Layout) -> bool {
    (c_layout == Layout::ColMajor) != kernel.c_col_major
}

/// The call's M and N for an output of `mk` × `nk` in `kernel`'s coordinates, with C stored
/// `c_layout`.
pub fn call_dims(kernel: &KernelSpec, c_layout: Layout, mk: usize, nk: usize) -> (usize, usize) {
    if swaps(kernel, c_layout) { (nk, mk) } else { (mk, nk) }
}

/// `m` and `n` rounded up to what `kernel` accepts with C stored `c_layout`: an entry that writes
/// C column-major needs C's contiguous dimension (N for a row-major C, M for a column-major one)
/// in multiples of 8.
pub fn dims_for(kernel: &KernelSpec, c_layout: Layout, m: usize, n: usize) -> (usize, usize) {
    match (kernel.c_col_major, c_layout) {
        (false, _) => (m, n),
        (true, Layout::RowMajor) => (m, n.next_multiple_of(8)),
        (true, Layout::ColMajor) => (m.next_multiple_of(8), n),
    }
}

/// `m` and `n` with the side that `kernel`'s tile columns run along (N, or M where the call
/// reaches it as Cᵀ) folded into one column of tiles, `1 + (x - 1) % tile_n`, for an entry that
/// takes no more for a call stored by v6's epilogue (`plain_epilogue`: alpha = 1, beta = 0) or
/// by the scaling one ([`KernelSpec::takes_one_column`]); for every other entry, unchanged.
/// Folding keeps a multiple of 8 one.
pub fn within_one_column(
    kernel: &KernelSpec,
    c_layout: Layout,
    plain_epilogue: bool,
    m: usize,
    n: usize,
) -> (usize, usize) {
    let fold = |x: usize| if x == 0 { 0 } else { 1 + (x - 1) % kernel.tile_n as usize };
    match (kernel.takes_one_column(plain_epilogue), swaps(kernel, c_layout)) {
        (false, _) => (m, n),
        (true, false) => (m, fold(n)),
        (true, true) => (fold(m), n),
    }
}

/// `op` in one line: shape, batch, storage orders with leading dimensions, alpha, beta.
pub fn describe(op: &GemmOp) -> String {
    let order = |l: Layout| if l == Layout::RowMajor { "row" } else { "col" };
    format!(
        "{}x{}x{} batch {} A {} ld {} B {} ld {} C {} ld {} alpha {} beta {}",
        op.m,
        op.n,
        op.k,
        op.batch,
        order(op.a_layout),
        op.lda,
        order(op.b_layout),
        op.ldb,
        order(op.c_layout),
        op.ldc,
        op.alpha,
        op.beta
    )
}

/// The sweep's bound on the work of one case (multiply-adds, all batch entries): 2^36, a few
/// tenths of a millisecond on an H200.
pub const SWEEP_MAX_MACS: usize = 1 << 36;
/// The sweep's bound on each operand's buffer (elements, padding and batch included): 2^27
/// (256 MiB), so that four buffers of this size serve every case.
pub const SWEEP_MAX_ELEMENTS: usize = 1 << 27;
/// The largest M or N the sweep draws: beyond 8192.
pub const SWEEP_MAX_DIM: usize = 12288;
/// The largest K.
pub const SWEEP_MAX_K: usize = 65536;

/// One case of the sweep: the call, and the seed of its inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepCase {
    /// Position in the sweep.
    pub index: usize,
    /// The call.
    pub op: GemmOp,
    /// Seed of its random inputs.
    pub seed: u64,
}

/// Whether `op` fits the sweep's bounds.
pub fn within_sweep_bounds(op: &GemmOp) -> bool {
    let (la, lb, lc) = lengths(op);
    op.m * op.n * op.k * op.batch <= SWEEP_MAX_MACS && la.max(lb).max(lc) <= SWEEP_MAX_ELEMENTS
}

/// `count` calls for `kernel`, reproducible from `seed` (each kernel draws its own stream).
///
/// Sizes are drawn in the kernel's own coordinates (rows and columns of the row-major C it
/// writes; a column-major C swaps them): a third sit at a tile boundary ±1 (tiles of
/// `unit_m` rows and `unit_n` columns, a cluster's) or ±8 for K (64-wide K slices), the rest are
/// tiny, log-uniform up to [`SWEEP_MAX_DIM`] or beyond 8192. K is a multiple of 8 in
/// 8..=[`SWEEP_MAX_K`]. A kernel whose dense C leaves through TMA (v6) takes N in multiples of 8,
/// the only ones it accepts. General kernels also draw C's storage order, padded leading
/// dimensions, alpha, beta and batches ([`Variant`]); the ladder's v0–v6 take the dense native
/// call. Every case fits [`within_sweep_bounds`] (K is halved until it does). The first cases
/// are fixed corners: the smallest call, one tile plus one, an output beyond 8192 in both
/// dimensions, K = 65536, and very tall and very wide outputs. For an entry that takes one column
/// of tiles only ([`KernelSpec::takes_one_column`], for the case's alpha and beta) every N is cut
/// to that column: in the corners to `tile_n`, in the draws to 1..=`tile_n`, its edge a third of
/// the time.
pub fn sweep_cases(kernel: &KernelSpec, seed: u64, count: usize) -> Vec<SweepCase> {
    let name_hash =
        kernel.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let mut rng = Rng::new(seed ^ name_hash);
    let (unit_m, unit_n, column) = (kernel.unit_m() as usize, kernel.unit_n() as usize, kernel.tile_n as usize);
    let n_step = if kernel.c_box.is_some() && !kernel.general { 8 } else { 1 };
    let up = |x: usize, step: usize| x.div_ceil(step) * step;

    let corners = [
        (1, 1, 8),
        (unit_m + 1, unit_n + 1, 72),
        (8193, 8200, 1000),
        (129, 136, 65536),
        (SWEEP_MAX_DIM + 1, 64, 4096),
        (64, SWEEP_MAX_DIM + 1, 4096),
    ];
    let mut cases = Vec::with_capacity(count);
    let mut draws = 0u64;
    while cases.len() < count {
        let index = cases.len();
        draws += 1;
        assert!(draws < 100 * count as u64 + 1000, "sweep for {} cannot find cases within its bounds", kernel.name);
        let v = if kernel.general { variant(&mut rng, kernel.stores_any_c()) } else { Variant::PLAIN };
        let one_column = kernel.takes_one_column(v.alpha == 1.0 && v.beta == 0.0);
        let (mk, nk, mut k) = match corners.get(index) {
            Some(&(m, n, k)) => (m, if one_column { n.min(column) } else { n }, k),
            None => {
                let m = dim(&mut rng, unit_m);
                let n = if !one_column {
                    dim(&mut rng, unit_n)
                } else if rng.chance(0.35) {
                    column - rng.range(0, 1)
                } else {
                    rng.range(1, column)
                };
                (m, n, k_dim(&mut rng))
            }
        };
        let nk = up(nk, n_step);
        let (m, n) = call_dims(kernel, v.c_layout, mk, nk);
        let (m, n) = dims_for(kernel, v.c_layout, m, n);
        let make = |k| if kernel.general { op_with(kernel, m, n, k, &v) } else { op_for(kernel, m, n, k) };
        while k > 8 && !within_sweep_bounds(&make(k)) {
            k = (k / 2).div_ceil(8) * 8;
        }
        let op = make(k);
        if within_sweep_bounds(&op) {
            cases.push(SweepCase { index, op, seed: rng.next_u64() });
        }
    }
    cases
}

/// A size along M or N with tiles of `unit`.
fn dim(rng: &mut Rng, unit: usize) -> usize {
    let r = rng.unit();
    if r < 0.35 {
        let tiles = rng.log_range(1, SWEEP_MAX_DIM / unit);
        (tiles * unit).saturating_add_signed(rng.pick(&[-1isize, 0, 1])).max(1)
    } else if r < 0.5 {
        rng.range(1, 64)
    } else if r < 0.85 {
        rng.log_range(1, SWEEP_MAX_DIM)
    } else {
        rng.range(8193, SWEEP_MAX_DIM)
    }
}

/// A K, a multiple of 8, before the bounds cut it down.
fn k_dim(rng: &mut Rng) -> usize {
    let r = rng.unit();
    let k = if r < 0.3 {
        (64 * rng.log_range(1, SWEEP_MAX_K / 64)).saturating_add_signed(rng.pick(&[-8isize, 0, 8]))
    } else if r < 0.4 {
        8 * rng.range(1, 8)
    } else if r < 0.9 {
        rng.log_range(8, SWEEP_MAX_K)
    } else {
        rng.range(SWEEP_MAX_K / 4, SWEEP_MAX_K)
    };
    (k / 8 * 8).clamp(8, SWEEP_MAX_K)
}

/// Random options; a ragged C a quarter of the time where `ragged_ok`.
fn variant(rng: &mut Rng, ragged_ok: bool) -> Variant {
    let mut pad = || if rng.chance(0.5) { 0 } else { 8 * rng.range(1, 8) };
    let pad = [pad(), pad(), pad()];
    let alpha = if rng.chance(0.4) { 1.0 } else { rng.pick(&[0.5f32, -1.25, 2.0, -0.3]) };
    let beta = if rng.chance(0.5) { 0.0 } else { rng.pick(&[1.0f32, -0.5, 0.25]) };
    let batch = if rng.chance(0.7) { 1 } else { rng.range(2, 4) };
    let mut gap = || 8 * rng.range(0, 4);
    let gap = [gap(), gap(), gap()];
    let c_layout = if rng.chance(0.5) { Layout::RowMajor } else { Layout::ColMajor };
    let ragged_c = ragged_ok && rng.chance(0.25);
    let pad = if ragged_c { [pad[0], pad[1], rng.range(0, 9)] } else { pad };
    Variant { c_layout, pad, alpha, beta, batch, gap, ragged_c }
}

/// Small calls for `kernel` that still take every path it has, for runs under compute-sanitizer
/// (which slows kernels down a hundredfold or more): whole tiles (a cluster's),
/// partial tiles in M, N and K with K long enough to wrap the stage ring, and for general kernels
/// the same partial shape through [`Variant::GENERAL`] (column-major C, padding, alpha, beta ≠ 0
/// so C is loaded, a batch of two).
pub fn small_cases(kernel: &KernelSpec) -> Vec<(String, GemmOp)> {
    let (unit_m, unit_n, column) = (kernel.unit_m() as usize, kernel.unit_n() as usize, kernel.tile_n as usize);
    // Partial tiles in the kernel's coordinates: an entry that writes C column-major takes its
    // M in multiples of 8, and one that takes one column of tiles gets a partial column (cut as
    // `verify_shapes` cuts it: 24 short of the tile, folded into the column where it is narrower);
    // with alpha and beta, so does one whose last staging box is shifted.
    let pm = if kernel.c_col_major { (unit_m + 61) / 8 * 8 } else { unit_m + 61 };
    let partial_n = |plain| if kernel.takes_one_column(plain) { column - 24 % column } else { unit_n + 40 };
    let (pn, pn_scaled) = (partial_n(true), partial_n(false));
    let plain = |mk, nk, k| {
        let (m, n) = call_dims(kernel, Layout::RowMajor, mk, nk);
        (format!("{m}x{n}x{k}"), op_for(kernel, m, n, k))
    };
    let mut cases = Vec::new();
    let (shape, op) = plain(unit_m, unit_n, 512);
    cases.push((format!("{shape} whole tiles"), op));
    let (shape, op) = plain(pm, pn, 520);
    cases.push((format!("{shape} partial tiles"), op));
    if kernel.general {
        // The same partial tiles in the kernel's coordinates, with C stored column-major.
        let (m, n) = call_dims(kernel, Layout::ColMajor, pm, pn_scaled);
        cases.push((
            format!("{m}x{n}x520 C col-major, padded, alpha -.75, beta .5, batch 2"),
            op_with(kernel, m, n, 520, &Variant::GENERAL),
        ));
        if kernel.stores_any_c() {
            // A C that TMA cannot write: every column stored by the threads, bf16 by bf16.
            cases.push((
                format!("{m}x{n}x520 C col-major, ragged (ldc {}), alpha -.75, beta .5, batch 2", m + 3),
                op_with(kernel, m, n, 520, &Variant::RAGGED),
            ));
        }
        // K = 0 reaches a general kernel (C = beta·C): its tiles must leave the operand stages alone.
        let (shape, op) = plain(pm, pn_scaled, 0);
        cases.push((format!("{shape} K = 0, beta .5"), op.beta(0.5)));
    }
    if kernel.stream_k.is_some() {
        // One unit 1,152 K blocks deep: on an H200 split across all 66 pairs or 132 CTAs, its
        // finisher adding dozens of partial sums.
        let (shape, op) = plain(unit_m, unit_n, 73728);
        cases.push((format!("{shape} one unit split by K (stream-K)"), op));
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use hgemm::plan;

    fn check_plannable(kernel: &KernelSpec, op: &GemmOp, what: &str) {
        let (la, lb, lc) = lengths(op);
        assert_eq!(op.validate(la, lb, lc), Ok(true), "{}: {what}: {op:?}", kernel.name);
        plan::plan(kernel, op, 0x10000, 0x20000, 0x30000)
            .unwrap_or_else(|e| panic!("{}: {what}: {e}: {op:?}", kernel.name));
    }

    #[test]
    fn rng_is_reproducible_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.log_range(1, 12288);
            assert_eq!(x, b.log_range(1, 12288));
            assert!((1..=12288).contains(&x));
            assert!((3..=5).contains(&a.range(3, 5)));
            b.range(3, 5);
        }
    }

    #[test]
    fn sweep_cases_are_valid_reproducible_and_cover_the_corners() {
        for kernel in hgemm_kernels::kernels() {
            let cases = sweep_cases(kernel, 42, 200);
            assert_eq!(cases, sweep_cases(kernel, 42, 200), "{}: same seed, same cases", kernel.name);
            assert_ne!(cases, sweep_cases(kernel, 43, 200), "{}: another seed, other cases", kernel.name);
            assert_eq!(cases.len(), 200);
            let (unit_m, unit_n) = (kernel.unit_m() as usize, kernel.unit_n() as usize);
            let (mut big_m, mut big_n, mut k_max, mut boundary) = (false, false, false, 0);
            let (mut col_c, mut batched, mut scaled, mut padded, mut ragged) = (false, false, false, false, false);
            for c in &cases {
                let op = &c.op;
                check_plannable(kernel, op, &format!("case {}", c.index));
                assert!(within_sweep_bounds(op), "{}: case {} out of bounds: {op:?}", kernel.name, c.index);
                assert!(op.k % 8 == 0 && (8..=SWEEP_MAX_K).contains(&op.k));
                let (rop, _) = plan::for_kernel(kernel, op);
                big_m |= rop.m > 8192;
                big_n |= rop.n > 8192;
                k_max |= op.k == SWEEP_MAX_K;
                let near =
                    |x: usize, unit: usize| [x % unit, (x + 1) % unit, (x + unit - 1) % unit].contains(&0) && x > 1;
                boundary += (near(rop.m, unit_m) || near(rop.n, unit_n)) as usize;
                col_c |= op.c_layout == Layout::ColMajor;
                batched |= op.batch > 1;
                scaled |= op.beta != 0.0 && op.alpha != 1.0;
                padded |= !op.is_native() && op.ldc > op.n.div_ceil(8) * 8;
                ragged |= !hgemm_kernels::staging::tma_strides_fit(op.ldc as u64, op.stride_c as u64, op.batch as u32);
            }
            // An entry that takes one column of tiles (with alpha and beta, or at all) need have
            // no N beyond 8192.
            big_n |= kernel.takes_one_column(false);
            assert!(big_m && big_n && k_max, "{}: M, N beyond 8192 and K = 65536 must all occur", kernel.name);
            assert!(boundary >= 40, "{}: only {boundary} cases at a tile boundary", kernel.name);
            if kernel.general {
                assert_eq!(ragged, kernel.stores_any_c(), "{}: a ragged C occurs where it is taken", kernel.name);
                assert!(
                    col_c && batched && scaled && padded,
                    "{}: layouts, batches, alpha/beta, padding must all occur",
                    kernel.name
                );
            } else {
                assert!(
                    cases.iter().all(|c| c.op.is_native()),
                    "{}: the ladder takes the dense native call only",
                    kernel.name
                );
            }
        }
    }

    #[test]
    fn small_cases_are_valid_and_include_partial_tiles() {
        for kernel in hgemm_kernels::kernels() {
            let cases = small_cases(kernel);
            assert_eq!(
                cases.len(),
                2 + 2 * kernel.general as usize + kernel.stores_any_c() as usize + kernel.stream_k.is_some() as usize,
                "{}",
                kernel.name
            );
            for (what, op) in &cases {
                check_plannable(kernel, op, what);
                // Splitting needs depth: the stream-K case is one unit, but deep.
                let most = if what.contains("stream-K") { 1 << 33 } else { 1 << 27 };
                assert!(op.m * op.n * op.k * op.batch <= most, "{}: {what} is too big for the sanitizers", kernel.name);
            }
            if let Some((what, op)) = cases.iter().find(|(w, _)| w.contains("stream-K")) {
                let shape = plan::launch_offline(kernel, op, 132).unwrap();
                assert!(shape.split.is_some_and(|sk| sk.splits()), "{}: {what} does not split on an H200", kernel.name);
            }
            let (partial, _) = plan::for_kernel(kernel, &cases[1].1);
            assert!(
                partial.m % kernel.tile_m as usize != 0
                    && partial.n % kernel.tile_n as usize != 0
                    && partial.k % 64 != 0
            );
        }
    }

    #[test]
    fn one_column_entries_get_calls_within_their_column() {
        let names =
            |plain| hgemm_kernels::kernels().filter(|k| k.takes_one_column(plain)).map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names(true), ["hopper_v7_narrow32_kk_cm", "hopper_v7_narrow16_kk_cm"]);
        assert_eq!(
            names(false),
            [
                "hopper_v7_trim_kk",
                "hopper_v7_trim_kk_cm",
                "hopper_v7_midtrim_kk",
                "hopper_v7_midtrim_kk_cm",
                "hopper_v7_widetrim_kk",
                "hopper_v7_widetrim_kk_cm",
                "hopper_v7_narrow32_kk_cm",
                "hopper_v7_narrow16_kk_cm",
                "hopper_v7_narrow96_kk",
                "hopper_v7_narrow96_kk_cm",
                "hopper_v7_tall144_kk",
                "hopper_v7_tall144_kk_cm",
                "hopper_v7_tall160_kk_cm",
                "hopper_v7_long144_kk",
                "hopper_v7_long144_kk_cm",
                "hopper_v7_long160_kk_cm",
                "hopper_v7_long176_kk_cm",
                "hopper_v7_twin80_kk",
                "hopper_v7_twin80_kk_cm",
                "hopper_v7_twin96_kk",
                "hopper_v7_twin96_kk_cm",
                "hopper_v7_twin112_kk",
                "hopper_v7_twin112_kk_cm"
            ]
        );
        for kernel in hgemm_kernels::kernels() {
            for plain in [true, false] {
                let folded =
                    [Layout::RowMajor, Layout::ColMajor].map(|l| within_one_column(kernel, l, plain, 1999, 3000));
                // Folded on the side the tiles' columns run along: 3000 = 18·160 + 120 for the
                // trim tiles, 13·224 + 88 for the wide one.
                let t = kernel.tile_n as usize;
                let (m, n) = (1 + 1998 % t, 1 + 2999 % t);
                let expected = match (kernel.takes_one_column(plain), kernel.c_col_major) {
                    (false, _) => [(1999, 3000), (1999, 3000)],
                    (true, false) => [(1999, n), (m, 3000)],
                    (true, true) => [(m, 3000), (1999, n)],
                };
                if t == 160 {
                    assert_eq!((m, n), (79, 120));
                }
                assert_eq!(folded, expected, "{} plain {plain}", kernel.name);
            }
            for &(m, n, k) in &crate::verify_shapes(kernel) {
                check_plannable(kernel, &op_for(kernel, m, n, k), &format!("verify {m}x{n}x{k}"));
            }
        }
    }

    #[test]
    fn op_with_puts_a_column_major_c_in_the_kernels_orders() {
        for kernel in hgemm_kernels::kernels().filter(|k| k.general) {
            for c_layout in [Layout::RowMajor, Layout::ColMajor] {
                let v = Variant { c_layout, ..Variant::GENERAL };
                // Within one column of tiles for the entries that take no more.
                let (m, n) = if kernel.takes_one_column(false) {
                    within_one_column(kernel, c_layout, false, 152, 144)
                } else {
                    (304, 200)
                };
                let op = op_with(kernel, m, n, 72, &v);
                // In the kernel's coordinates C is row-major: A (M×K) row-major and B (K×N)
                // column-major are K-major.
                let (kop, _) = plan::for_kernel(kernel, &op);
                let major = |k_major: bool| if k_major { Major::K } else { Major::MN };
                assert_eq!(
                    (major(kop.a_layout == Layout::RowMajor), major(kop.b_layout == Layout::ColMajor)),
                    (kernel.a_major, kernel.b_major),
                    "{} {c_layout:?}",
                    kernel.name
                );
                check_plannable(kernel, &op, &format!("{m}x{n}x72"));
            }
        }
    }
}
