//! Tensor-parallel Llama-style MLP layers on NCCL: the MLP split column-parallel (gate and up,
//! hgemm's gated GEMM with SwiGLU fused on each rank's interleaved shard) then row-parallel (down),
//! the ranks' partial outputs summed by NCCL's all-reduce (cudarc's bindings, NCCL's own library),
//! over as many GPUs as are visible or `--gpus`, one process, one communicator per GPU.
//!
//! The tokens go through in micro-batches: on each GPU the compute stream runs micro-batch b+1's
//! GEMMs while the communication stream all-reduces micro-batch b's partial y, ordered by events
//! (the all-reduce waits for its GEMMs; the next pass's GEMMs wait for the all-reduce that last
//! read their output). The result is checked against the same layers computed unsharded on
//! GPU 0, within hgemm's tolerance (`hgemm::measure::TOLERANCE`), and timed as tokens/s with
//! hgemm or cuBLAS (+ a separate SwiGLU kernel) computing the GEMMs, overlapped and with each
//! all-reduce waited for before the next micro-batch (`serial`).
//!
//! `hgemm-tensor-parallel [--gpus N] [--tokens 4096] [--micro-batches 4] [--d 8192] [--i 28672]
//! [--backend hgemm,cublas] [--max-sms N] [--passes 10]`. NCCL is loaded at run time:
//! `scripts/device-tp.sh` finds it (and keeps NVLink multicast off, NCCL_NVLS_ENABLE=0).

mod random;
mod rank;
mod shard;

use clap::Parser;
use cudarc::driver::CudaContext;
use cudarc::nccl::{Comm, ReduceOp, result as nccl};
use half::bf16;
use hgemm::{Activation, GemmOp};
use rank::{Backend, Rank, Res, Weights};
use shard::{Split, micro_batches};
use std::time::Instant;

/// Tensor-parallel Llama MLP layers on NCCL, hgemm against cuBLAS.
#[derive(Debug, Parser)]
struct Args {
    /// GPUs (ranks) to use, the first N visible (default all).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    gpus: Option<u32>,
    /// Tokens per pass (x's rows).
    #[arg(long, default_value_t = 4096)]
    tokens: usize,
    /// Micro-batches the tokens are split into.
    #[arg(long, default_value_t = 4)]
    micro_batches: usize,
    /// Model width (Llama-3 70B: 8192).
    #[arg(long, default_value_t = 8192)]
    d: usize,
    /// Intermediate features (Llama-3 70B: 28672).
    #[arg(long, default_value_t = 28672)]
    i: usize,
    /// Which libraries compute the GEMMs, each timed in turn.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Backend::Hgemm, Backend::Cublas])]
    backend: Vec<Backend>,
    /// Hold the GEMMs to N SMs per GPU (hgemm's budget, cuBLAS's SM count target), leaving the
    /// rest to NCCL's kernels.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_sms: Option<u32>,
    /// Timed passes over the tokens (after one untimed).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    passes: u32,
}

fn main() -> Res<()> {
    let args = Args::parse();
    // SAFETY: only tries to load the library.
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err("NCCL's library (libnccl.so) was not found: put its directory on LD_LIBRARY_PATH (scripts/device-tp.sh does)".into());
    }
    // cudarc panics where it cannot load the driver: hgemm's check first.
    if !hgemm::device::driver_present() {
        return Err(hgemm::Error::NoDriver.into());
    }
    let visible = CudaContext::device_count()? as usize;
    let ranks = args.gpus.map_or(visible, |n| n as usize);
    if ranks == 0 || ranks > visible {
        return Err(format!("--gpus {ranks}: {visible} GPUs are visible").into());
    }
    let split = Split::new(args.d, args.i, ranks)?;
    let batches = micro_batches(args.tokens, args.micro_batches)?;
    let mut nccl_version = 0;
    // SAFETY: writes one int (major·10000 + minor·100 + patch).
    unsafe { cudarc::nccl::sys::ncclGetVersion(&mut nccl_version) };

    // Weights and x drawn on the host (bf16), as a checkpoint would be loaded.
    let (d, i, tokens) = (args.d, args.i, args.tokens);
    let scale = 1.0 / (d as f32).sqrt();
    let w = Weights::new(
        random(i * d, 1, scale),
        random(i * d, 2, scale),
        random(d * i, 3, 1.0 / (i as f32).sqrt()),
        split,
    )?;
    let x = random(tokens * d, 4, 1.0);

    let contexts: Vec<_> = (0..ranks).map(hgemm::device::context).collect::<Result<_, _>>()?;
    let mut ranks = contexts
        .iter()
        .enumerate()
        .map(|(r, ctx)| Rank::new(ctx.clone(), split, r, &w, &x, &batches))
        .collect::<Res<Vec<Rank>>>()?;
    let comm_streams = contexts.iter().map(|c| c.new_stream()).collect::<Result<Vec<_>, _>>()?;
    let comms = Comm::from_devices(comm_streams).map_err(|e| format!("ncclCommInitAll: {e:?}"))?;
    let d0 = ranks[0].gemm.device();
    println!(
        "tensor-parallel MLP: d {d}, I {i} ({} features per GPU), {tokens} tokens in {} micro-batches; {} × {} ({} SMs), NCCL {}.{}.{}",
        split.i_per_rank(),
        batches.len(),
        ranks.len(),
        d0.name,
        d0.sms,
        nccl_version / 10000,
        nccl_version / 100 % 100,
        nccl_version % 100,
    );
    if let Some(n) = args.max_sms {
        for r in &ranks {
            r.set_max_sms(Some(n))?;
        }
        println!("GEMMs held to {n} SMs per GPU (hgemm's budget, cuBLAS's SM count target)");
    }

    let reference = unsharded(&ranks[0], &w, &x, split, tokens)?;
    let flops = 2.0 * tokens as f64 * d as f64 * 3.0 * i as f64;
    for &backend in &args.backend {
        // One pass, checked on every rank against the unsharded layers.
        pass(&mut ranks, &comms, backend, true)?;
        for (r, rank) in ranks.iter().enumerate() {
            let mut y = Vec::with_capacity(tokens * d);
            for b in &rank.y {
                y.extend(comms[r].stream().clone_dtoh(b)?);
            }
            let err = rel_error(&y, &reference);
            if err.is_nan() || err > hgemm::measure::TOLERANCE {
                return Err(format!(
                    "{backend:?}: rank {r}'s y differs from the unsharded layers' by {err:.2e} (tolerance {:.0e})",
                    hgemm::measure::TOLERANCE
                )
                .into());
            }
            if r == 0 {
                println!("{backend:?}: y on every rank within {err:.2e} of the unsharded layers on GPU 0");
            }
        }
        for overlapped in [true, false] {
            let start = Instant::now();
            for _ in 0..args.passes {
                pass(&mut ranks, &comms, backend, overlapped)?;
            }
            synchronize(&ranks, &comms)?;
            let s = start.elapsed().as_secs_f64() / args.passes as f64;
            println!(
                "{backend:?}, {}: {:.3} ms a pass, {:.0} tokens/s, {:.0} TFLOP/s over {} GPUs",
                if overlapped { "all-reduce overlapped" } else { "serial" },
                s * 1e3,
                tokens as f64 / s,
                flops / s / 1e12,
                ranks.len()
            );
        }
    }
    println!("ok");
    Ok(())
}

/// One pass over every micro-batch on every rank: b's GEMMs on the compute streams, then b's
/// all-reduce (one NCCL group over the ranks) on the communication streams once they are done;
/// `overlapped` lets b+1's GEMMs run meanwhile, else each compute stream waits for it first.
fn pass(ranks: &mut [Rank], comms: &[Comm], backend: Backend, overlapped: bool) -> Res<()> {
    for b in 0..ranks[0].y.len() {
        for rank in ranks.iter_mut() {
            rank.compute(backend, b)?;
        }
        for (rank, comm) in ranks.iter().zip(comms) {
            comm.stream().wait(&rank.computed[b])?;
        }
        // One thread drives every communicator: NCCL needs their calls in one group.
        nccl::group_start().map_err(|e| format!("ncclGroupStart: {e:?}"))?;
        for (rank, comm) in ranks.iter_mut().zip(comms) {
            comm.all_reduce_in_place(&mut rank.y[b], &ReduceOp::Sum).map_err(|e| format!("ncclAllReduce: {e:?}"))?;
        }
        nccl::group_end().map_err(|e| format!("ncclGroupEnd: {e:?}"))?;
        for (rank, comm) in ranks.iter().zip(comms) {
            rank.reduced[b].record(&comm.stream())?;
            if !overlapped {
                rank.compute.wait(&rank.reduced[b])?;
            }
        }
    }
    Ok(())
}

/// Wait for every rank's compute and communication streams.
fn synchronize(ranks: &[Rank], comms: &[Comm]) -> Res<()> {
    for (rank, comm) in ranks.iter().zip(comms) {
        rank.compute.synchronize()?;
        comm.stream().synchronize()?;
    }
    Ok(())
}

/// The same layers on GPU 0 without sharding (hgemm, the whole weights, every token at once):
/// y as f64.
fn unsharded(rank: &Rank, w: &Weights, x: &[bf16], split: Split, tokens: usize) -> Res<Vec<f64>> {
    let (d, i) = (split.d, split.i);
    let s = &rank.compute;
    let (x, gate_up, down) = (s.clone_htod(x)?, s.clone_htod(&w.interleaved)?, s.clone_htod(&w.down)?);
    let mut h = s.alloc_zeros::<bf16>(tokens * i)?;
    let mut y = s.alloc_zeros::<bf16>(tokens * d)?;
    let g = &rank.gemm;
    g.gemm(s, &GemmOp::new(tokens, 2 * i, d).activation(Activation::Silu).gated(), &x, &gate_up, &mut h)?;
    g.gemm(s, &GemmOp::new(tokens, d, i), &h, &down, &mut y)?;
    Ok(s.clone_dtoh(&y)?.iter().map(|v| v.to_f64()).collect())
}

/// ‖y − reference‖ / ‖reference‖ (infinite where y holds a non-finite value).
fn rel_error(y: &[bf16], reference: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0, 0.0);
    for (v, r) in y.iter().zip(reference) {
        let v = v.to_f64();
        if !v.is_finite() {
            return f64::INFINITY;
        }
        diff += (v - r) * (v - r);
        norm += r * r;
    }
    if y.len() != reference.len() { f64::INFINITY } else { (diff / norm.max(f64::MIN_POSITIVE)).sqrt() }
}

/// `n` bf16 uniform in [-scale, scale) from stream `seed`.
fn random(n: usize, seed: u64, scale: f32) -> Vec<bf16> {
    random::uniform(n, seed).map(|u| bf16::from_f64(u * scale as f64)).collect()
}
