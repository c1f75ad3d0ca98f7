//! Warpgroup matrix multiply-accumulate, `wgmma` (§9.7.15, sm_90a), bf16 inputs, f32
//! accumulators in registers. Every instruction here is `.sync.aligned`: all 128 threads of the
//! warpgroup execute the same instruction, so call these only from warpgroup-uniform code.
use crate::desc::wgmma::SmemDesc;
use core::arch::asm;

/// `wgmma.fence.sync.aligned;` — order earlier register and shared-memory accesses before the
/// next `wgmma.mma_async` reads them.
#[inline(always)]
pub fn fence() {
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// `wgmma.commit_group.sync.aligned;` — close a group of the `mma_async`s issued so far.
#[inline(always)]
pub fn commit_group() {
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// A thread's share of a warpgroup's m64nNk16 f32 accumulator: N/2 registers. Register `i` of
/// lane `l` in warp `w` (of the warpgroup) holds row `16w + l/4 + 8·((i/2) % 2)`, column
/// `8·(i/4) + 2·(l % 4) + i % 2` (§9.7.15.5.1, "Matrix Fragments for wgmma.m64nNk16").
///
/// The accumulator must stay in registers: index it only with constants. Its methods are
/// generated straight-line for that reason (a loop LLVM declines to unroll would put it in local
/// memory).
pub trait Fragment: Sized {
    /// All zeros. (`[0.0; N]` makes rustc emit a fill loop that keeps the array in memory.)
    fn zeroed() -> Self;

    /// `wgmma.wait_group.sync.aligned N;` — wait until at most `N` committed groups are pending.
    /// The fragment's registers are operands of the same `asm!`, so no read of them can be
    /// scheduled before the wait.
    fn wait_group<const N: u32>(&mut self);

    /// `f(p, d[2p], d[2p + 1])` for every register pair `p` (two adjacent columns), unrolled.
    fn for_each_pair(&self, f: impl FnMut(u32, f32, f32));

    /// `(d[2p], d[2p + 1]) = f(p, d[2p], d[2p + 1])` for every register pair `p`, unrolled.
    fn map_pairs(&mut self, f: impl FnMut(u32, f32, f32) -> (f32, f32));

    /// `st.global.v2.f32 [at + 1024p], {d[2p], d[2p + 1]};` for every register pair `p`
    /// (§9.7.9.9): the warpgroup's fragments laid out pair-major, thread `t` passing
    /// `at = base + 8t`, so a warp's stores are contiguous. The offsets are immediates: computed
    /// addresses would be hoisted out of the tile loop and crowd the accumulator's registers.
    fn st_global_pairs(&self, at: u64);

    /// `ld.global.cg.v2.f32` of what [`Fragment::st_global_pairs`] stored at `at`, added to the
    /// fragment (§9.7.9.8). `.cg` caches in L2 only: another SM wrote the data.
    fn add_ld_global_cg_pairs(&mut self, at: u64);

    /// The `wgmma.mma_async` m64nNk16 whose accumulator this fragment is (the free function of
    /// that N below): D += A·Bᵀ with both operands in shared memory.
    fn mma_async<const TRANS_A: u32, const TRANS_B: u32>(&mut self, a: SmemDesc, b: SmemDesc, scale_d: u32);
}

/// Register pair (`$a`, `$b`) of fragment `$d` to `[$at + 512·$a]` (`Fragment::st_global_pairs`).
macro_rules! st_global_pair {
    ($d:ident, $at:ident, $a:literal, $b:literal) => {
        unsafe {
            asm!("st.global.v2.f32 [{at}+{o}], {{{x}, {y}}};", at = in(reg64) $at, o = const $a * 512, x = in(reg32) $d[$a], y = in(reg32) $d[$b], options(nostack));
        }
    };
}

/// `[$at + 512·$a]` added to register pair (`$a`, `$b`) of `$d` (`Fragment::add_ld_global_cg_pairs`).
macro_rules! add_ld_global_cg_pair {
    ($d:ident, $at:ident, $a:literal, $b:literal) => {{
        let (x, y): (f32, f32);
        unsafe {
            asm!("ld.global.cg.v2.f32 {{{x}, {y}}}, [{at}+{o}];", at = in(reg64) $at, o = const $a * 512, x = out(reg32) x, y = out(reg32) y, options(nostack));
        }
        $d[$a] += x;
        $d[$b] += y;
    }};
}

macro_rules! fragment {
    ($regs:literal, $n:literal, $mma:ident, [($a0:literal, $b0:literal) $(, ($a:literal, $b:literal))* $(,)?]) => {
        impl Fragment for [f32; $regs] {
            #[inline(always)]
            fn zeroed() -> Self {
                // SAFETY: all-zero bits are 0.0 in every element.
                unsafe { core::mem::zeroed() }
            }

            #[inline(always)]
            fn wait_group<const N: u32>(&mut self) {
                let d = self;
                unsafe {
                    asm!(
                        // The registers are named in a comment: they only pin the ordering.
                        concat!("wgmma.wait_group.sync.aligned {n}; // {", stringify!($a0), "} {", stringify!($b0), "}" $(, " {", stringify!($a), "} {", stringify!($b), "}")*),
                        inout(reg32) d[$a0], inout(reg32) d[$b0], $(inout(reg32) d[$a], inout(reg32) d[$b],)*
                        n = const N,
                        options(nostack)
                    )
                };
            }

            #[inline(always)]
            fn for_each_pair(&self, mut f: impl FnMut(u32, f32, f32)) {
                f($a0 / 2, self[$a0], self[$b0]);
                $(f($a / 2, self[$a], self[$b]);)*
            }

            #[inline(always)]
            fn map_pairs(&mut self, mut f: impl FnMut(u32, f32, f32) -> (f32, f32)) {
                (self[$a0], self[$b0]) = f($a0 / 2, self[$a0], self[$b0]);
                $((self[$a], self[$b]) = f($a / 2, self[$a], self[$b]);)*
            }

            #[inline(always)]
            fn st_global_pairs(&self, at: u64) {
                st_global_pair!(self, at, $a0, $b0);
                $(st_global_pair!(self, at, $a, $b);)*
            }

            #[inline(always)]
            fn add_ld_global_cg_pairs(&mut self, at: u64) {
                add_ld_global_cg_pair!(self, at, $a0, $b0);
                $(add_ld_global_cg_pair!(self, at, $a, $b);)*
            }

            #[inline(always)]
            fn mma_async<const TRANS_A: u32, const TRANS_B: u32>(&mut self, a: SmemDesc, b: SmemDesc, scale_d: u32) {
                $mma::<TRANS_A, TRANS_B>(self, a, b, scale_d);
            }
        }

        #[doc = concat!("`wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16` — D (64×", $n, ") += A (64×16) · B (", $n, "×16)ᵀ,")]
        /// both operands in shared memory by descriptor. `scale_d == 0` ignores D's old value
        /// (the first K step of a tile). `TRANS_A`/`TRANS_B` = 1 select an MN-major operand.
        #[inline(always)]
        pub fn $mma<const TRANS_A: u32, const TRANS_B: u32>(d: &mut [f32; $regs], a: SmemDesc, b: SmemDesc, scale_d: u32) {
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p;",
                    ".reg .b64 da, db;",
                    "setp.ne.b32 p, {sd}, 0;",
                    "mov.b64 da, {{{a_lo}, {a_hi}}};",
                    "mov.b64 db, {{{b_lo}, {b_hi}}};",
                    concat!(
                        "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", stringify!($a0), "}, {", stringify!($b0), "}"
                        $(, ", {", stringify!($a), "}, {", stringify!($b), "}")*,
                        "}}, da, db, p, 1, 1, {ta}, {tb};"
                    ),
                    "}}",
                    inout(reg32) d[$a0], inout(reg32) d[$b0], $(inout(reg32) d[$a], inout(reg32) d[$b],)*
                    // The descriptors go in as 32-bit halves: the high half (strides, swizzle) is
                    // a constant, and a K step only adds to the low half's address field, which
                    // never carries. Passed whole, each K step's descriptor was a 64-bit add that
                    // ptxas carried into the high half.
                    a_lo = in(reg32) a.0 as u32,
                    a_hi = in(reg32) (a.0 >> 32) as u32,
                    b_lo = in(reg32) b.0 as u32,
                    b_hi = in(reg32) (b.0 >> 32) as u32,
                    sd = in(reg32) scale_d,
                    ta = const TRANS_A,
                    tb = const TRANS_B,
                    options(nostack)
                )
            };
        }
    };
}

#[rustfmt::skip]
fragment!(128, 256, mma_async_m64n256k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71), (72, 73), (74, 75), (76, 77), (78, 79),
        (80, 81), (82, 83), (84, 85), (86, 87), (88, 89), (90, 91), (92, 93), (94, 95),
        (96, 97), (98, 99), (100, 101), (102, 103), (104, 105), (106, 107), (108, 109), (110, 111),
        (112, 113), (114, 115), (116, 117), (118, 119), (120, 121), (122, 123), (124, 125), (126, 127),
]);

#[rustfmt::skip]
fragment!(112, 224, mma_async_m64n224k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71), (72, 73), (74, 75), (76, 77), (78, 79),
        (80, 81), (82, 83), (84, 85), (86, 87), (88, 89), (90, 91), (92, 93), (94, 95),
        (96, 97), (98, 99), (100, 101), (102, 103), (104, 105), (106, 107), (108, 109), (110, 111),
]);

#[rustfmt::skip]
fragment!(56, 112, mma_async_m64n112k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55),
]);

#[rustfmt::skip]
fragment!(96, 192, mma_async_m64n192k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71), (72, 73), (74, 75), (76, 77), (78, 79),
        (80, 81), (82, 83), (84, 85), (86, 87), (88, 89), (90, 91), (92, 93), (94, 95),
]);

#[rustfmt::skip]
fragment!(80, 160, mma_async_m64n160k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71), (72, 73), (74, 75), (76, 77), (78, 79),
]);

#[rustfmt::skip]
fragment!(88, 176, mma_async_m64n176k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71), (72, 73), (74, 75), (76, 77), (78, 79),
        (80, 81), (82, 83), (84, 85), (86, 87),
]);

#[rustfmt::skip]
fragment!(72, 144, mma_async_m64n144k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
        (64, 65), (66, 67), (68, 69), (70, 71),
]);

#[rustfmt::skip]
fragment!(48, 96, mma_async_m64n96k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
]);

#[rustfmt::skip]
fragment!(40, 80, mma_async_m64n80k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39),
]);

#[rustfmt::skip]
fragment!(64, 128, mma_async_m64n128k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
        (32, 33), (34, 35), (36, 37), (38, 39), (40, 41), (42, 43), (44, 45), (46, 47),
        (48, 49), (50, 51), (52, 53), (54, 55), (56, 57), (58, 59), (60, 61), (62, 63),
]);

#[rustfmt::skip]
fragment!(32, 64, mma_async_m64n64k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
        (16, 17), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27), (28, 29), (30, 31),
]);

#[rustfmt::skip]
fragment!(16, 32, mma_async_m64n32k16, [
        (0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15),
]);

#[rustfmt::skip]
fragment!(8, 16, mma_async_m64n16k16, [
        (0, 1), (2, 3), (4, 5), (6, 7),
]);
