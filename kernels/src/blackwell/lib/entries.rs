//! The one list of the library entry's PTX entry points, one per pair of storage orders of A
//! and B, each with its [`KernelSpec`].

use super::spec;
use crate::spec::KernelSpec;

/// Declares each entry point (its three tensor-map parameters, then `kernel::gemm`) and
/// `ENTRIES`, their specs in the same order.
macro_rules! entries {
    ($($name:ident: $a:ident, $b:ident;)*) => {
        /// Every entry: A and B K-major first (C = A·Bᵀ, both row-major), then the other orders.
        pub const ENTRIES: &[KernelSpec] = &[$(spec(stringify!($name), entries!(@mn $a), entries!(@mn $b))),*];
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
                super::kernel::gemm::<{ entries!(@mn $a) }, { entries!(@mn $b) }>(maps, &args);
            }
        )*
    };
    (@mn K) => { false };
    (@mn MN) => { true };
}

// name: A, B (K- or MN-major).
entries! {
    blackwell_lib_kk: K, K;
    blackwell_lib_kmn: K, MN;
    blackwell_lib_mnk: MN, K;
    blackwell_lib_mnmn: MN, MN;
}
