//! Compiles against hgemm with cudarc linked to libcuda at build time (the application's choice).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gemm = hgemm::Gemm::new(cudarc::driver::CudaContext::new(0)?)?;
    println!("hgemm on {:?} ({} kernels)", gemm.family(), gemm.kernels().count());
    Ok(())
}
