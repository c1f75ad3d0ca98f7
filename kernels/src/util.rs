//! Small kernels the host uses to prepare and check data on the device: random bf16 inputs (so no
//! gigabytes cross PCIe), a poison fill for outputs, and a comparison of two bf16 buffers that
//! returns a few sums instead of the buffers.

/// A counter-based hash (SplitMix64's finalizer): element `i` of stream `seed` is the same value
/// whatever the launch shape.
#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// bf16 bits of `x` (round to nearest even; inputs here are finite).
#[inline(always)]
fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// Two bf16 uniform in [-scale, scale), packed (the first in the low half), from a 32-bit hash
/// of `index` (Chris Wellons' "lowbias32"; 16 bits of it per value are more than a bf16's 8-bit
/// mantissa needs): shared-memory operands for the tensor-core ceilings (`hopper::ceiling`),
/// cheap enough that filling 192 KB takes a few microseconds.
#[cfg(hopper)]
#[inline(always)]
pub(crate) fn random_bf16x2(index: u32, scale: f32) -> u32 {
    let mut x = index;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    let u = |bits: u32| (bits & 0xffff) as f32 * (1.0 / 32768.0) - 1.0;
    crate::ptx::cvt::rn_bf16x2_f32(u(x) * scale, u(x >> 16) * scale)
}

/// `out[i] = scale · u`, u uniform in [-1, 1), for i < n; grid-stride.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_fill_random_bf16(out: *mut u16, n: u64, seed: u64, scale: f32) {
    let stride = crate::ptx::sreg::nctaid_x() as u64 * 256;
    let mut i = crate::ptx::sreg::ctaid_x() as u64 * 256 + crate::ptx::sreg::tid_x() as u64;
    while i < n {
        let h = mix(seed.wrapping_mul(0x9e3779b97f4a7c15) ^ mix(i));
        let u = (h >> 40) as f32 * (1.0 / (1u64 << 23) as f32) - 1.0;
        unsafe { out.add(i as usize).write(bf16_bits(u * scale)) };
        i += stride;
    }
}

/// `out[i] = bits` for i < n; grid-stride.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_fill_u16(out: *mut u16, n: u64, bits: u16) {
    let stride = crate::ptx::sreg::nctaid_x() as u64 * 256;
    let mut i = crate::ptx::sreg::ctaid_x() as u64 * 256 + crate::ptx::sreg::tid_x() as u64;
    while i < n {
        unsafe { out.add(i as usize).write(bits) };
        i += stride;
    }
}

/// Threads per CTA of [`hgemm_compare_bf16`]; it needs `COMPARE_THREADS * 32` bytes of dynamic
/// shared memory.
const COMPARE_THREADS: u32 = 256;

/// Whether bf16 `bits` is finite (its exponent is not all ones).
#[inline(always)]
fn bf16_finite(bits: u16) -> bool {
    bits & 0x7f80 != 0x7f80
}

/// Compare `out` with `reference`, `n` bf16 each, and add to `result` (five u64, zeroed by the
/// host before the first comparison it wants summed): `[0]` Σ(out − ref)² and `[1]` Σref² as f64
/// bits, over the elements finite in both; `[2]` elements finite in `reference` but not in `out`
/// (left poisoned: unwritten); `[3]` elements finite in `out` but not in `reference` (written
/// where nothing should have been: padding or guard poisoned in both); `[4]` elements whose bits
/// differ. Grid-stride, `COMPARE_THREADS` threads per CTA; each CTA sums in shared memory and adds
/// its totals with five atomics.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_compare_bf16(out: *const u16, reference: *const u16, n: u64, result: *mut u64) {
    use crate::ptx::{bar, red, smem, sreg};
    let tid = sreg::tid_x();
    let stride = sreg::nctaid_x() as u64 * COMPARE_THREADS as u64;
    let mut i = sreg::ctaid_x() as u64 * COMPARE_THREADS as u64 + tid as u64;
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    let (mut unwritten, mut stray, mut differ) = (0u32, 0u32, 0u32);
    while i < n {
        let (o, r) = unsafe { (out.add(i as usize).read(), reference.add(i as usize).read()) };
        differ += (o != r) as u32;
        match (bf16_finite(o), bf16_finite(r)) {
            (true, true) => {
                let (x, y) = (f32::from_bits((o as u32) << 16) as f64, f32::from_bits((r as u32) << 16) as f64);
                diff += (x - y) * (x - y);
                norm += y * y;
            }
            (false, true) => unwritten += 1,
            (true, false) => stray += 1,
            (false, false) => {}
        }
        i += stride;
    }
    // Tree sum over the CTA: slot t holds (diff, norm, unwritten, stray, differ) of thread t.
    let slot = |t: u32| smem::base() + 32 * t;
    let store = |t: u32, d: f64, r: f64, u: u32, s: u32, b: u32| {
        smem::st_b64(slot(t), d.to_bits());
        smem::st_b64(slot(t) + 8, r.to_bits());
        smem::st_b32(slot(t) + 16, u);
        smem::st_b32(slot(t) + 20, s);
        smem::st_b32(slot(t) + 24, b);
    };
    let load = |t: u32| {
        (
            f64::from_bits(smem::ld_b64(slot(t))),
            f64::from_bits(smem::ld_b64(slot(t) + 8)),
            smem::ld_b32(slot(t) + 16),
            smem::ld_b32(slot(t) + 20),
            smem::ld_b32(slot(t) + 24),
        )
    };
    store(tid, diff, norm, unwritten, stray, differ);
    bar::sync_all();
    let mut half = COMPARE_THREADS / 2;
    while half > 0 {
        if tid < half {
            let (a, b) = (load(tid), load(tid + half));
            store(tid, a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3, a.4 + b.4);
        }
        bar::sync_all();
        half /= 2;
    }
    if tid == 0 {
        let (d, r, u, s, b) = load(0);
        let at = result as u64;
        red::add_f64(at, d);
        red::add_f64(at + 8, r);
        red::add_u64(at + 16, u as u64);
        red::add_u64(at + 24, s as u64);
        red::add_u64(at + 32, b as u64);
    }
}

/// A deliberately broken pipeline, for the hang guard's test: thread 0 initialises the mbarrier
/// 8 bytes into the dynamic shared memory and arms its first phase for 1024 bytes of
/// transactions that no copy will ever deliver; every thread then waits for that phase.
/// Launch with 16 bytes of dynamic shared memory.
#[cfg(hang_guard)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_hang_test() {
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, fence, smem, sreg};
    let barrier = Barrier(smem::base() + 8);
    if sreg::tid_x() == 0 {
        mbarrier::init(barrier, 1);
        fence::mbarrier_init_release_cluster();
    }
    bar::sync_all();
    if sreg::tid_x() == 0 {
        mbarrier::arrive_expect_tx(barrier, 1024);
    }
    mbarrier::wait(barrier, 0);
}

/// A stream-K flag nobody publishes, for the hang guard's test: thread 0 of one CTA waits, as a
/// finishing worker does (`epilogue::Partial::wait`), for the u32 at `flag` (zero, and left so)
/// to become nonzero.
#[cfg(hang_guard)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_hang_flag_test(flag: u64) {
    if crate::ptx::sreg::tid_x() == 0 {
        crate::epilogue::Partial { sums: 0, flag }.wait();
    }
}
