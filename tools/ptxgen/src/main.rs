//! `hgemm-ptxgen`: rebuilds the committed PTX (`host/ptx/`) from the kernels crate with the
//! pinned nightly, and the cubins from that PTX with ptxas (`scripts/build-ptx.sh` runs it). With
//! `--check` it writes nothing and exits non-zero when a committed file is stale.

use hgemm_ptxgen::{
    CUBIN_RECORD, Cubin, Output, Workspace, assemble, build, ptxas_version, record, record_line, stale,
};
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            eprintln!("usage: hgemm-ptxgen [--check]");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hgemm-ptxgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(check: bool) -> Result<bool, Box<dyn std::error::Error>> {
    let ws = Workspace::this();
    let mut fresh = Vec::new();
    for output in Output::all() {
        eprintln!("hgemm-ptxgen: building {output} with {}", ws.nightly()?);
        fresh.push((output, build(&ws, output)?));
    }
    if check {
        let problems = stale(&ws, &fresh);
        for p in &problems {
            eprintln!("{p}");
        }
        if !problems.is_empty() {
            eprintln!("the committed PTX is stale: run scripts/build-ptx.sh and commit host/ptx/");
        }
        return Ok(problems.is_empty());
    }
    let dir = ws.ptx_dir();
    for (output, text) in &fresh {
        let path = dir.join(output.file());
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(&path, text)?;
        eprintln!("wrote {} ({} bytes)", path.display(), text.len());
    }
    let version = ptxas_version()?;
    let recorded = std::fs::read_to_string(dir.join(CUBIN_RECORD)).unwrap_or_default();
    let mut lines = Vec::new();
    for cubin in Cubin::all() {
        // ptxas's output differs from run to run: a cubin already recorded as this PTX assembled
        // is kept, so that rebuilding unchanged kernels changes no file.
        let ptx = std::fs::read(dir.join(cubin.source().file()))?;
        if let Ok(bytes) = std::fs::read(dir.join(cubin.file()))
            && recorded.lines().any(|l| l.trim() == record_line(cubin, &ptx, &bytes))
        {
            eprintln!("hgemm-ptxgen: {} is current", cubin.file().display());
            lines.push(record_line(cubin, &ptx, &bytes));
            continue;
        }
        eprintln!("hgemm-ptxgen: assembling {} with ptxas {version}", cubin.file().display());
        let bytes = assemble(&ws, cubin)?;
        let path = dir.join(cubin.file());
        std::fs::write(&path, &bytes)?;
        eprintln!("wrote {} ({} bytes)", path.display(), bytes.len());
        lines.push(record_line(cubin, &ptx, &bytes));
    }
    std::fs::write(dir.join(CUBIN_RECORD), record(&version, &lines))?;
    Ok(true)
}
