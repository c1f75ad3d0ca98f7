//! The fused epilogue's activations ([`crate::fused::Activation`]) in f32, on the device's
//! approximate `ex2` and `rcp` (one SFU operation each, errors of a few f32 ulp: far below the
//! half-ulp of the bf16 the result is rounded to). Built for the device, and for the host's
//! unit tests with exact `exp2` and `1/x`, which check the formulas.
use crate::fused::Activation;

#[cfg(not(test))]
use crate::ptx::float::{ex2_approx_ftz_f32 as exp2, rcp_approx_ftz_f32 as rcp};

#[cfg(test)]
fn exp2(x: f32) -> f32 {
    extern crate std;
    std::primitive::f32::exp2(x)
}

#[cfg(test)]
fn rcp(x: f32) -> f32 {
    1.0 / x
}

const LOG2E: f32 = core::f32::consts::LOG2_E;

/// 1 / (1 + e^(−s)): exact at both ends (e^(−s) overflowing to +inf gives +0), so that
/// x·sigmoid(·) keeps its relative accuracy where it is tiny, unlike 0.5·(1 + tanh(·)).
#[inline(always)]
fn sigmoid(s: f32) -> f32 {
    rcp(1.0 + exp2(-s * LOG2E))
}

/// erfc(z)/2 for z ≥ 0, with a fractional error below 1.2e-7 everywhere: the Chebyshev fit of
/// Numerical Recipes in C, 2nd ed., §6.2 (`erfcc`), erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2).
/// Relative, not absolute, accuracy: GELU's negative tail x·erfc(|x|/√2)/2 keeps it.
// The coefficients as published, though f32 holds fewer of their digits.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn half_erfc(z: f32) -> f32 {
    let t = rcp(1.0 + 0.5 * z);
    let p = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    0.5 * t * exp2((p - z * z) * LOG2E)
}

/// GELU, tanh form: 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), written as
/// x·sigmoid(2u) (the same function; no cancellation for x ≪ 0).
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    // 2·√(2/π) and 2·√(2/π)·0.044715.
    #[allow(clippy::excessive_precision)]
    const A: f32 = 1.595_769_1;
    const B: f32 = 0.071_354_82;
    x * sigmoid(x * (A + B * x * x))
}

/// GELU, erf form: x·Φ(x), Φ(x) = 0.5·(1 + erf(x/√2)) = erfc(−x/√2)/2.
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    let h = half_erfc(x.abs() * core::f32::consts::FRAC_1_SQRT_2);
    x * if x < 0.0 { h } else { 1.0 - h }
}

/// max(x, 0).
#[inline(always)]
pub fn relu(x: f32) -> f32 {
    x.max(0.0)
}

/// SiLU: x·sigmoid(x).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x * sigmoid(x)
}

/// `act(x)`. `act` is the same in every thread of a launch: its branches are uniform.
#[inline(always)]
pub fn activate(act: Activation, x: f32) -> f32 {
    match act {
        Activation::Identity => x,
        Activation::Relu => relu(x),
        Activation::GeluTanh => gelu_tanh(x),
        Activation::GeluErf => gelu_erf(x),
        Activation::Silu => silu(x),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// erfc in f64: 2 − erfc(−z) below 0, its Taylor series below 2, the continued fraction
    /// erfc(z) = e^(−z²)/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …)))) from 2 on.
    fn erfc64(z: f64) -> f64 {
        if z < 0.0 {
            2.0 - erfc64(-z)
        } else if z < 2.0 {
            let (mut term, mut sum, mut n) = (z, z, 0.0);
            while term.abs() > 1e-18 {
                n += 1.0;
                term *= -z * z / n;
                sum += term / (2.0 * n + 1.0);
            }
            1.0 - 2.0 / core::f64::consts::PI.sqrt() * sum
        } else {
            let mut f = z;
            for k in (1..200).rev() {
                f = z + (k as f64 / 2.0) / f;
            }
            (-z * z).exp() / core::f64::consts::PI.sqrt() / f
        }
    }

    fn gelu_u(x: f64) -> f64 {
        (2.0 / core::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)
    }

    #[test]
    fn gelu_tanh_forms_agree() {
        for i in -300..=300 {
            let x = i as f64 * 0.01;
            let (tanh_form, sigmoid_form) = (0.5 * x * (1.0 + gelu_u(x).tanh()), reference(Activation::GeluTanh, x));
            assert!(
                (tanh_form - sigmoid_form).abs() <= 1e-12 * sigmoid_form.abs().max(1e-3),
                "{x}: {tanh_form} {sigmoid_form}"
            );
        }
    }

    fn reference(act: Activation, x: f64) -> f64 {
        match act {
            Activation::Identity => x,
            Activation::Relu => x.max(0.0),
            // x·sigmoid(2u): 0.5·x·(1 + tanh(u)) cancels to 0 in f64 for x < −9 (the two
            // agree elsewhere: `gelu_tanh_forms_agree`).
            Activation::GeluTanh => x / (1.0 + (-2.0 * gelu_u(x)).exp()),
            Activation::GeluErf => 0.5 * x * erfc64(-x / core::f64::consts::SQRT_2),
            Activation::Silu => x / (1.0 + (-x).exp()),
        }
    }

    #[test]
    fn erfc_reference_is_right() {
        // Both forms, either side of their switch at 2 (Abramowitz & Stegun, Table 7.1).
        for (z, want) in [
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_1),
            (1.5, 0.033_894_853_524_689_27),
            (2.0, 4.677_734_981_047_266e-3),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
        ] {
            assert!((erfc64(z) / want - 1.0).abs() < 1e-12, "erfc({z}) = {}", erfc64(z));
            assert!((erfc64(-z) - (2.0 - want)).abs() < 1e-12, "erfc(-{z}) = {}", erfc64(-z));
        }
    }

    /// Relative error far below bf16's half-ulp (2^-9) everywhere the result is a normal f32,
    /// negative tails included (where it grows with |x|: an f32 exponent of −600 is off by
    /// its rounding, ~4e-5 of the result).
    #[test]
    fn activations_match_f64_to_well_below_a_bf16_half_ulp() {
        for act in Activation::ALL {
            let mut worst = 0.0f64;
            for i in -4000..=4000 {
                let x = i as f32 * 0.005;
                let (got, want) = (activate(act, x) as f64, reference(act, x as f64));
                if want.abs() > 1e-30 {
                    worst = worst.max(((got - want) / want).abs());
                } else {
                    assert!(got.abs() <= 1e-30, "{act:?}({x}) = {got}, want {want}");
                }
            }
            assert!(worst < 1e-4, "{act:?}: relative error {worst}");
        }
    }
}
