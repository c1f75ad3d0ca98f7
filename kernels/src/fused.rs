//! What a GEMM's epilogue computes besides alpha and beta: a bias over the output's columns, an
//! activation, and the gated units of current MLPs. Read by the kernels and by the host, which
//! packs it into [`GemmArgs::epilogue`](crate::args::GemmArgs).
//!
//! Each output element is, in f32 before the one rounding to bf16,
//! `y = act(alpha·(A·B)[i][j] + bias[j]) + beta·C[i][j]`: beta is the residual add, after the
//! activation (cuBLASLt adds beta·C before its activation; the two agree where beta is 0).
//!
//! Gated (GLU) calls: the GEMM's N = 2·I columns are the gate and up projections interleaved in
//! blocks of [`GLU_BLOCK`] columns (columns `2·b·8 .. 2·b·8 + 8` are gate columns `b·8 .. b·8 + 8`,
//! the next 8 are up columns `b·8 .. b·8 + 8`), and the call writes the I columns
//! `y[i][j] = act(g) · u` with `g`, `u` the gate and up pre-activations (each with alpha and its
//! bias applied); beta then adds `beta·C[i][j]` over the I output columns. Blocks of 8 keep each
//! gate value and its up value in one thread's accumulators in every wgmma tile, along N or,
//! for entries computing Cᵀ, along M.

/// The activation applied to each pre-activation value.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// None: y = x.
    Identity = 0,
    /// max(x, 0).
    Relu = 1,
    /// GELU, tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    GeluTanh = 2,
    /// GELU, erf form: 0.5·x·(1 + erf(x/√2)).
    GeluErf = 3,
    /// SiLU (swish): x·sigmoid(x) = x / (1 + e^(−x)).
    Silu = 4,
}

impl Activation {
    /// Every activation, in the order of their codes.
    pub const ALL: [Activation; 5] =
        [Activation::Identity, Activation::Relu, Activation::GeluTanh, Activation::GeluErf, Activation::Silu];

    /// The activation of `code` (the low bits of [`Epilogue`]); unknown codes are the identity.
    pub const fn from_code(code: u32) -> Activation {
        match code {
            1 => Activation::Relu,
            2 => Activation::GeluTanh,
            3 => Activation::GeluErf,
            4 => Activation::Silu,
            _ => Activation::Identity,
        }
    }
}

/// The element type of a bias vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BiasType {
    /// bf16, as the weights.
    Bf16,
    /// f32.
    F32,
}

/// Columns in one block of a gated call's interleaved gate and up columns.
pub const GLU_BLOCK: u32 = 8;

/// The fused epilogue, packed in one u32 for the kernel's parameters: bits 0–3 the activation,
/// bit 4 a bias is present, bit 5 the bias is f32 (else bf16), bit 6 the call is gated, bit 7 the
/// kernel computes Cᵀ (the host swapped A and B), so that the bias and the gate/up interleave
/// run along the kernel's M instead of its N.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Epilogue(pub u32);

impl Epilogue {
    const BIAS: u32 = 1 << 4;
    const BIAS_F32: u32 = 1 << 5;
    const GATED: u32 = 1 << 6;
    const ALONG_M: u32 = 1 << 7;

    /// No bias, no activation, not gated: the plain alpha/beta epilogue.
    pub const NONE: Epilogue = Epilogue(0);

    /// This epilogue with `act`.
    pub const fn with_activation(self, act: Activation) -> Epilogue {
        Epilogue((self.0 & !0xf) | act as u32)
    }

    /// This epilogue with a bias of type `ty`.
    pub const fn with_bias(self, ty: BiasType) -> Epilogue {
        let f32_bit = if matches!(ty, BiasType::F32) { Self::BIAS_F32 } else { 0 };
        Epilogue((self.0 & !Self::BIAS_F32) | Self::BIAS | f32_bit)
    }

    /// This epilogue gated: act(gate) · up over interleaved columns (see the module's docs).
    pub const fn gated(self) -> Epilogue {
        Epilogue(self.0 | Self::GATED)
    }

    /// This epilogue for a kernel that computes Cᵀ: bias and gating along its M.
    pub const fn along_m(self) -> Epilogue {
        Epilogue(self.0 | Self::ALONG_M)
    }

    /// Whether bias and gating run along the kernel's M (it computes Cᵀ).
    pub const fn is_along_m(self) -> bool {
        self.0 & Self::ALONG_M != 0
    }

    /// The activation.
    pub const fn activation(self) -> Activation {
        Activation::from_code(self.0 & 0xf)
    }

    /// The bias's type, if there is a bias.
    pub const fn bias(self) -> Option<BiasType> {
        match (self.0 & Self::BIAS != 0, self.0 & Self::BIAS_F32 != 0) {
            (false, _) => None,
            (true, false) => Some(BiasType::Bf16),
            (true, true) => Some(BiasType::F32),
        }
    }

    /// Whether the call is gated.
    pub const fn is_gated(self) -> bool {
        self.0 & Self::GATED != 0
    }

    /// Whether there is nothing beyond alpha and beta.
    pub const fn is_none(self) -> bool {
        self.0 & !Self::ALONG_M == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_pack_and_unpack_independently() {
        for act in Activation::ALL {
            for bias in [None, Some(BiasType::Bf16), Some(BiasType::F32)] {
                for gated in [false, true] {
                    let mut e = Epilogue::NONE.with_activation(act);
                    if let Some(ty) = bias {
                        e = e.with_bias(ty);
                    }
                    if gated {
                        e = e.gated();
                    }
                    assert_eq!((e.activation(), e.bias(), e.is_gated()), (act, bias, gated));
                    assert_eq!(e.is_none(), act == Activation::Identity && bias.is_none() && !gated);
                    let t = e.along_m();
                    assert!(t.is_along_m() && !e.is_along_m());
                    assert_eq!((t.activation(), t.bias(), t.is_gated(), t.is_none()), (act, bias, gated, e.is_none()));
                }
            }
        }
        assert_eq!(Epilogue::NONE.with_bias(BiasType::F32).with_bias(BiasType::Bf16).bias(), Some(BiasType::Bf16));
    }
}
