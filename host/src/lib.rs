//! hgemm: BF16 GEMM on NVIDIA Hopper and Blackwell tensor cores, with kernels written in Rust.
//!
//! One [`Gemm`] handle per CUDA context loads the kernels for its device (Hopper: compute
//! capability 9.0; Blackwell: 10.x) and computes C = alpha·A·B + beta·C on cudarc device memory,
//! enqueued on the caller's stream, with A, B and C in either storage order, leading dimensions
//! wider than the rows, and strided batches ([`GemmOp`]). Every check runs before anything is
//! enqueued; a call the kernels cannot take returns an [`Error`] instead.
//!
//! ```no_run
//! use cudarc::driver::CudaContext;
//! use half::bf16;
//! use hgemm::{Gemm, GemmOp, Layout};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gemm = Gemm::new(CudaContext::new(0)?)?;
//! let stream = gemm.context().default_stream();
//! let (m, n, k) = (512, 1024, 256);
//! let x = stream.clone_htod(&vec![bf16::from_f32(0.5); m * k])?; // M×K, row-major
//! let w = stream.clone_htod(&vec![bf16::from_f32(0.25); k * n])?; // K×N, row-major
//! let mut y = stream.alloc_zeros::<bf16>(m * n)?;
//!
//! // y = x·w, both row-major: B is given K×N row-major.
//! let op = GemmOp::new(m, n, k).b(Layout::RowMajor, n);
//! gemm.gemm(&stream, &op, &x, &w, &mut y)?;
//! stream.synchronize()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Fused epilogues
//!
//! A linear layer's bias and activation, and the gated units of current MLPs, run inside the
//! GEMM's epilogue on Hopper's v7 entries and Blackwell's library entries (the ladders refuse
//! them; Blackwell's by name, [`Error::Lacks`] with [`Lack::FusedEpilogue`]): each element is `y = act(alpha·(A·B)[i][j] + bias[j]) + beta·C[i][j]`
//! in f32, rounded to bf16 once; beta is the residual add, after the activation. The op declares
//! the epilogue ([`GemmOp::bias`], [`GemmOp::activation`], [`GemmOp::gated`]) and
//! [`Gemm::gemm_bias`] takes the bias buffer (bf16 or f32); [`Gemm::gemm`] takes calls without
//! a bias. A gated call reads one B whose N = 2·I columns are the gate and up projections
//! interleaved in blocks of 8 ([`interleave_gate_up`] lays weights and biases out so, once) and
//! writes the M×I output `act(gate)·up`: SwiGLU with [`Activation::Silu`], GeGLU with a GELU.
//!
//! ```no_run
//! use cudarc::driver::CudaContext;
//! use half::bf16;
//! use hgemm::{Activation, BiasType, Gemm, GemmOp, Layout, interleave_gate_up};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gemm = Gemm::new(CudaContext::new(0)?)?;
//! let stream = gemm.context().default_stream();
//! let (tokens, d, i) = (512, 4096, 14336);
//! // nn.Linear weights, out×in row-major: B of the native call, column-major K×N.
//! let (w_gate, w_up) = (vec![bf16::ZERO; i * d], vec![bf16::ZERO; i * d]);
//! let w = stream.clone_htod(&interleave_gate_up(&w_gate, &w_up, Layout::ColMajor, i, d)?)?;
//! let x = stream.alloc_zeros::<bf16>(tokens * d)?;
//! let mut h = stream.alloc_zeros::<bf16>(tokens * i)?;
//! // h = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ): a GEMM with N = 2·I, writing I columns.
//! let swiglu = GemmOp::new(tokens, 2 * i, d).activation(Activation::Silu).gated();
//! gemm.gemm(&stream, &swiglu, &x, &w, &mut h)?;
//! // y = gelu(x·Wᵀ + b) with an f32 bias.
//! let (w1, b1) = (stream.alloc_zeros::<bf16>(i * d)?, stream.alloc_zeros::<f32>(i)?);
//! let mut y = stream.alloc_zeros::<bf16>(tokens * i)?;
//! let op = GemmOp::new(tokens, i, d).bias(BiasType::F32).activation(Activation::GeluTanh);
//! gemm.gemm_bias(&stream, &op, &x, &w1, &b1, &mut y)?;
//! stream.synchronize()?;
//! # Ok(())
//! # }
//! ```
//!
//! `auto`'s choice of kernel is a price fitted to measurements on an H200; [`Gemm::tune`] times
//! the kernels it weighs for a call's shape on the caller's own device and runs the fastest for
//! later calls of that shape ([`tune`]; the choices save and load as text).
//!
//! Calls may be captured into CUDA graphs (cudarc's `CudaStream::begin_capture`, in any capture
//! mode, on one stream or several) and replayed on any stream: a call enqueues one kernel and
//! nothing else. Split calls in a capture get stream-K workspaces of the graph's own, one per
//! stream of the capture, allocated and cleared outside it and held by the graph (a CUDA user
//! object), so replays share them with no other launch; they are freed once the graph is
//! destroyed and its launches have finished, at the handle's next chance (a new workspace or
//! [`Gemm::release_workspace`]). Two executable graphs instantiated from one captured graph share
//! its workspaces, so they do not run at once, and no graph of the handle's calls is launched
//! after the handle is dropped. With more than one stream, cudarc's event tracking makes
//! captured calls wait on events recorded outside the capture, which CUDA refuses: capture with
//! it off (`disable_event_tracking`). The same tracking puts event waits and records between two
//! calls on a stream, which keeps the second from starting while the first finishes
//! (programmatic dependent launch): small calls run slower with it on (2048×2048×512 by 14% on an
//! H200, the README's measurement); [`Gemm::launch_prepared`] or a graph avoids that.
//!
//! The kernels themselves are the `hgemm-kernels` crate, compiled to PTX with rustc's nvptx64
//! backend and embedded ([`ptx`]): the PTX is committed with this crate, so building it needs
//! stable Rust only (no nightly, no CUDA toolkit). The linking mode and CUDA version of cudarc's
//! bindings are the application's choice; where it makes none, cudarc loads the driver at run
//! time. [`measure`] fills, compares and times on the device, for tuning; the `hgemm-testing`
//! crate (the cuBLAS harness) and the `hgemm` CLI (`hgemm-cli`) build on it to check the kernels
//! against cuBLAS and time them.
//!
//! # Layers
//!
//! Each module imports only from the layers above it in this list (and from `hgemm-kernels`):
//!
//! 1. [`error`], [`device`], [`ptx`], [`hang`], [`tensor_map`]: errors, device properties, the
//!    embedded kernels, hang reports, tensor-map parameters and their encoding.
//! 2. [`op`]: the call, [`GemmOp`] and [`Layout`], and its checks; [`glu`]: the gated units'
//!    weight layout. Plain data, no GPU.
//! 3. [`plan`]: a call and a kernel's spec turned into tensor maps, arguments and a launch shape,
//!    and the kernel's refusals. No GPU.
//! 4. [`choose`]: `auto`'s price and rules. No GPU.
//! 5. `tuned`: tuned choices, their table and text format, and the pick between them and the
//!    price (public as [`tune`]'s). No GPU.
//! 6. [`launch`], `graph`, `workspace`: the driver's launch, graph-capture bookkeeping,
//!    stream-K workspaces.
//! 7. [`gemm`]: the handle, [`Gemm`].
//! 8. [`measure`]: device fills, comparisons and timing, for tuning and the harness.
//! 9. [`tune`]: measured choices on the caller's GPU ([`Gemm::tune`]).
#![warn(missing_docs)]
pub mod calibrate;
pub mod choose;
pub mod device;
pub mod error;
pub mod gemm;
pub mod glu;
mod graph;
pub mod hang;
pub mod launch;
pub mod measure;
pub mod op;
pub mod plan;
pub mod ptx;
pub mod tensor_map;
pub mod tune;
mod tuned;
mod workspace;

pub use calibrate::{CalibrateOptions, Calibration};
pub use choose::Model;
pub use device::DeviceInfo;
pub use error::{Error, Lack, Result};
pub use gemm::{BiasElement, Gemm, Prepared};
pub use glu::interleave_gate_up;
pub use hgemm_kernels::fused::{Activation, BiasType};
pub use hgemm_kernels::ladder_of;
pub use hgemm_kernels::spec::{Family, KernelSpec};
pub use op::{GemmOp, Layout};
pub use tune::{Choice, TuneOptions, TuneTable, Tuning};
