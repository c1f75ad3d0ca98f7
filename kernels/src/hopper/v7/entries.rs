//! The one list of v7's entries: each line is a PTX entry point and its [`KernelSpec`], made
//! from the same tile, operand orders (K- or MN-major A and B) and orientation of C.

use super::spec;
#[cfg(hopper)]
use super::{kernel::gemm, tiles::*};
use crate::spec::KernelSpec;

/// Declares each entry point (its own tensor-map parameters, then `kernel::gemm`) and `ENTRIES`, their
/// specs in the same order.
macro_rules! entries {
    ($($name:ident: $tile:ident, $a:ident, $b:ident, $c:ident;)*) => {
        const ENTRIES: &[KernelSpec] = &[$(spec::<super::tiles::$tile>(
            stringify!($name),
            entries!(@mn $a),
            entries!(@mn $b),
            entries!(@col $c),
        )),*];
        $(
            #[cfg(hopper)]
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                _a: crate::args::TensorMapParam,
                _b: crate::args::TensorMapParam,
                _c: crate::args::TensorMapParam,
                _a_edge: crate::args::TensorMapParam,
                _b_edge: crate::args::TensorMapParam,
                args: crate::args::GemmArgs,
            ) {
                let maps = [
                    crate::tensor_map_param!($name, 0),
                    crate::tensor_map_param!($name, 1),
                    crate::tensor_map_param!($name, 2),
                    crate::tensor_map_param!($name, 3),
                    crate::tensor_map_param!($name, 4),
                ];
                gemm::<
                    $tile,
                    { <$tile as Tile>::STAGES },
                    { <$tile as Tile>::PRODUCER_REGS },
                    { <$tile as Tile>::CONSUMER_REGS },
                    { entries!(@mn $a) as u32 },
                    { entries!(@mn $b) as u32 },
                    crate::staging::$c,
                >(maps, &args);
            }
        )*
    };
    (@mn K) => { false };
    (@mn MN) => { true };
    (@col RowMajorC) => { false };
    (@col ColMajorC) => { true };
}

// name: tile, A, B (K- or MN-major), C.
entries! {
    hopper_v7: Tile128x256, K, K, RowMajorC;
    hopper_v7_wide_kmn: Tile128x256, K, MN, RowMajorC;
    hopper_v7_wide_mnk: Tile128x256, MN, K, RowMajorC;
    hopper_v7_wide_mnmn: Tile128x256, MN, MN, RowMajorC;
    hopper_v7_mid_kk: Tile128x192, K, K, RowMajorC;
    hopper_v7_mid_mnk: Tile128x192, MN, K, RowMajorC;
    hopper_v7_mid_kk_cm: Tile128x192, K, K, ColMajorC;
    hopper_v7_square_kk: Tile128x128, K, K, RowMajorC;
    hopper_v7_square_kmn: Tile128x128, K, MN, RowMajorC;
    hopper_v7_square_mnk: Tile128x128, MN, K, RowMajorC;
    hopper_v7_square_mnmn: Tile128x128, MN, MN, RowMajorC;
    hopper_v7_slim_kk: Tile64x128, K, K, RowMajorC;
    hopper_v7_slim_kmn: Tile64x128, K, MN, RowMajorC;
    hopper_v7_slim_mnk: Tile64x128, MN, K, RowMajorC;
    hopper_v7_slim_mnmn: Tile64x128, MN, MN, RowMajorC;
    hopper_v7_lean_kk: Tile64x192, K, K, RowMajorC;
    hopper_v7_lean_kk_cm: Tile64x192, K, K, ColMajorC;
    hopper_v7_trim_kk: Tile64x160, K, K, RowMajorC;
    hopper_v7_trim_kk_cm: Tile64x160, K, K, ColMajorC;
    hopper_v7_midtrim_kk: Tile128x160, K, K, RowMajorC;
    hopper_v7_midtrim_kk_cm: Tile128x160, K, K, ColMajorC;
    hopper_v7_widetrim_kk: Tile128x224, K, K, RowMajorC;
    hopper_v7_widetrim_kk_cm: Tile128x224, K, K, ColMajorC;
    hopper_v7_thin_kk: Tile64x64, K, K, RowMajorC;
    hopper_v7_thin_kmn: Tile64x64, K, MN, RowMajorC;
    hopper_v7_thin_mnk: Tile64x64, MN, K, RowMajorC;
    hopper_v7_thin_mnmn: Tile64x64, MN, MN, RowMajorC;
    hopper_v7_narrow32_kk_cm: Tile64x32, K, K, ColMajorC;
    hopper_v7_narrow16_kk_cm: Tile64x16, K, K, ColMajorC;
    hopper_v7_narrow96_kk: Tile64x96, K, K, RowMajorC;
    hopper_v7_narrow96_kk_cm: Tile64x96, K, K, ColMajorC;
    hopper_v7_tall_kk: Tile256x128, K, K, RowMajorC;
    hopper_v7_tall_kk_cm: Tile256x128, K, K, ColMajorC;
    hopper_v7_tall144_kk: Tile256x144, K, K, RowMajorC;
    hopper_v7_tall144_kk_cm: Tile256x144, K, K, ColMajorC;
    hopper_v7_tall160_kk_cm: Tile256x160, K, K, ColMajorC;
    hopper_v7_long128_kk: Tile192x128, K, K, RowMajorC;
    hopper_v7_long128_kk_cm: Tile192x128, K, K, ColMajorC;
    hopper_v7_long144_kk: Tile192x144, K, K, RowMajorC;
    hopper_v7_long144_kk_cm: Tile192x144, K, K, ColMajorC;
    hopper_v7_long160_kk_cm: Tile192x160, K, K, ColMajorC;
    hopper_v7_long176_kk_cm: Tile192x176, K, K, ColMajorC;
    hopper_v7_twin80_kk: Tile128x80, K, K, RowMajorC;
    hopper_v7_twin80_kk_cm: Tile128x80, K, K, ColMajorC;
    hopper_v7_twin96_kk: Tile128x96, K, K, RowMajorC;
    hopper_v7_twin96_kk_cm: Tile128x96, K, K, ColMajorC;
    hopper_v7_twin112_kk: Tile128x112, K, K, RowMajorC;
    hopper_v7_twin112_kk_cm: Tile128x112, K, K, ColMajorC;
}

/// The ladder's v7: the 128×256 tile, A and B K-major (C = A·Bᵀ, both row-major).
pub const SPEC: KernelSpec = ENTRIES[0];

/// Every other entry the library dispatches to: each tile shape with each storage order.
pub const VARIANTS: &[KernelSpec] = ENTRIES.split_first().unwrap().1;
