//! Kernel parameters in parameter space.

/// The generic address of tensor-map parameter `$index` of entry `$entry`, as a
/// [`TensorMap`](crate::ptx::tma::TensorMap): `mov.u64` of the parameter symbol (its name is
/// `<entry>_param_<index>` in rustc's PTX) and `cvta.param.u64` (§9.7.9.19), which is what
/// nvcc emits for a `__grid_constant__` parameter. TMA reads the map in place; nothing is copied.
#[macro_export]
macro_rules! tensor_map_param {
    ($entry:ident, $index:literal) => {{
        let addr: u64;
        unsafe {
            core::arch::asm!(
                concat!("mov.u64 {r}, ", stringify!($entry), "_param_", stringify!($index), ";\n\tcvta.param.u64 {r}, {r};"),
                r = out(reg64) addr,
                options(pure, nomem, nostack)
            )
        };
        $crate::ptx::tma::TensorMap(addr)
    }};
}
