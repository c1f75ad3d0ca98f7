//! The shapes the subcommands run by name, and `MxNxK` parsing.

/// M, N and K of a call.
pub type Shape = (usize, usize, usize);

/// The shapes of the Hopper performance target (M×N×K): `--sweep`.
pub const SWEEP: &[Shape] = &[
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (16384, 16384, 16384),
    (8192, 28672, 8192),
    (8192, 8192, 28672),
    (4096, 14336, 4096),
    (8192, 1024, 8192),
    (8000, 8000, 8000),
    (6144, 6144, 6144),
    (1024, 8192, 8192),
    (128, 8192, 8192),
];

/// N×K of the linear layers of Llama-2 7B and 13B and Llama-3 8B and 70B on one GPU (QKV and
/// gate+up fused): `--llm` runs each at [`LLM_TOKENS`] rows.
pub const LLM_LAYERS: &[(usize, usize)] = &[
    (12288, 4096),
    (4096, 4096),
    (22016, 4096),
    (4096, 11008),
    (6144, 4096),
    (28672, 4096),
    (4096, 14336),
    (10240, 8192),
    (8192, 8192),
    (57344, 8192),
    (8192, 28672),
    (15360, 5120),
    (5120, 5120),
    (27648, 5120),
    (5120, 13824),
];
/// The rows (tokens) `--llm` runs each layer at.
pub const LLM_TOKENS: &[usize] = &[256, 512, 1024, 2048, 3072, 4096];

/// Llama-3 8B's and 70B's MLPs: (hidden, intermediate).
pub const LLAMA3_MLPS: &[(usize, usize)] = &[(4096, 14336), (8192, 28672)];
/// The tokens `--mlp` runs each MLP layer at.
pub const MLP_TOKENS: &[usize] = &[512, 1024, 2048, 4096, 8192];

/// The MLP layers of [`LLAMA3_MLPS`] at [`MLP_TOKENS`]: for a gated epilogue the gate+up GEMM
/// (N = 2·intermediate), else the up (hidden → intermediate) and down projections.
pub fn mlp_shapes(gated: bool) -> Vec<Shape> {
    let mut shapes = Vec::new();
    for &(d, i) in LLAMA3_MLPS {
        for &t in MLP_TOKENS {
            if gated {
                shapes.push((t, 2 * i, d));
            } else {
                shapes.extend([(t, i, d), (t, d, i)]);
            }
        }
    }
    shapes
}

/// One `MxNxK`.
pub fn parse_shape(t: &str) -> Result<Shape, String> {
    let v: Vec<usize> =
        t.split('x').map(|d| d.parse().map_err(|_| format!("bad shape {t}"))).collect::<Result<_, _>>()?;
    match v[..] {
        [m, n, k] => Ok((m, n, k)),
        _ => Err(format!("bad shape {t}: want MxNxK")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlp_layers_of_both_models_at_every_token_count() {
        let gated = mlp_shapes(true);
        assert_eq!(gated.len(), 10);
        assert!(gated.contains(&(512, 28672, 4096)) && gated.contains(&(8192, 57344, 8192)));
        let plain = mlp_shapes(false);
        assert_eq!(plain.len(), 20);
        assert!(plain.contains(&(4096, 14336, 4096)) && plain.contains(&(4096, 4096, 14336)));
    }

    #[test]
    fn shapes_parse_or_say_why_not() {
        assert_eq!(parse_shape("128x8192x64"), Ok((128, 8192, 64)));
        assert_eq!(parse_shape("8192x8192"), Err("bad shape 8192x8192: want MxNxK".into()));
        assert_eq!(parse_shape("1x2x3x4"), Err("bad shape 1x2x3x4: want MxNxK".into()));
        assert_eq!(parse_shape("1xtwox3"), Err("bad shape 1xtwox3".into()));
        assert_eq!(parse_shape(""), Err("bad shape ".into()));
    }
}
