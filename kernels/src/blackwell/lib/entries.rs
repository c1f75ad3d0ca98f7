//! The one list of the library entry's PTX entry points, one per tile width and pair of storage
//! orders of A and B, each with its [`KernelSpec`].

use super::spec;
use crate::spec::KernelSpec;

/// Declares each entry point (its three tensor-map parameters, then `kernel::gemm`) and
/// `ENTRIES`, their specs in the same order.
macro_rules! entries {
    ($($name:ident: $tile:ident, $a:ident, $b:ident;)*) => {
        /// Every entry: A and B K-major first (C = A·Bᵀ, both row-major), then the other orders;
        /// the 256-wide pair's, the 128-wide pair's, then the single CTA's.
        pub const ENTRIES: &[KernelSpec] = &[$(spec(stringify!($name), super::$tile, entries!(@mn $a), entries!(@mn $b))),*];
        $(
            #[cfg(blackwell)]
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                _a: crate::args::TensorMapParam,
                _b: crate::args::TensorMapParam,
                _c: crate::args::TensorMapParam,
                args: crate::args::GemmArgs,
            ) {
                let maps = [
                    crate::tensor_map_param!($name, 0),
                    crate::tensor_map_param!($name, 1),
                    crate::tensor_map_param!($name, 2),
                ];
                super::kernel::gemm::<
                    { super::$tile.0 },
                    { super::$tile.1 },
                    { super::$tile.2 },
                    { entries!(@mn $a) },
                    { entries!(@mn $b) },
                >(maps, &args);
            }
        )*
    };
    (@mn K) => { false };
    (@mn MN) => { true };
}

// name: tile (`WIDE`, `HALF`, `SINGLE`), A, B (K- or MN-major).
entries! {
    blackwell_lib_kk: WIDE, K, K;
    blackwell_lib_kmn: WIDE, K, MN;
    blackwell_lib_mnk: WIDE, MN, K;
    blackwell_lib_mnmn: WIDE, MN, MN;
    blackwell_lib_n128_kk: HALF, K, K;
    blackwell_lib_n128_kmn: HALF, K, MN;
    blackwell_lib_n128_mnk: HALF, MN, K;
    blackwell_lib_n128_mnmn: HALF, MN, MN;
    blackwell_lib_single_kk: SINGLE, K, K;
    blackwell_lib_single_kmn: SINGLE, K, MN;
    blackwell_lib_single_mnk: SINGLE, MN, K;
    blackwell_lib_single_mnmn: SINGLE, MN, MN;
}
