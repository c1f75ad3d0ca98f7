//! The committed PTX (`host/ptx/`) is what the kernels crate compiles to today: every output is
//! rebuilt with the pinned nightly and compared with its file, and any difference fails, naming
//! the file and its first differing line; each cubin must be recorded as assembled from the PTX
//! committed now (`host/ptx/cubins.txt`). `scripts/build-ptx.sh` rewrites the files. Needs no GPU
//! and no ptxas.

use hgemm_ptxgen::{Output, Workspace, build, stale};

#[test]
fn committed_ptx_matches_a_fresh_build() {
    let ws = Workspace::this();
    let fresh: Vec<_> = Output::all().map(|o| (o, build(&ws, o).unwrap_or_else(|e| panic!("{e}")))).collect();
    let problems = stale(&ws, &fresh);
    assert!(
        problems.is_empty(),
        "the committed PTX is stale; run scripts/build-ptx.sh and commit host/ptx/:\n{}",
        problems.join("\n")
    );
}
