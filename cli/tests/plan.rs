//! `hgemm plan` and the kernel columns of the README's and `docs/shapes.md`'s tables: which
//! kernel `auto` runs for a shape, and whether it splits tiles, worked out without a GPU. Needs
//! no GPU.

use hgemm::{GemmOp, KernelSpec, choose};
use hgemm_kernels::spec::Family;
use std::process::Command;

/// The Hopper kernel `auto` picks on a 132-SM GPU, as the tables name it, and whether
/// its schedule splits tiles by K.
fn pick(m: usize, n: usize, k: usize) -> (&'static str, bool) {
    let hopper: Vec<&KernelSpec> = hgemm_kernels::kernels().filter(|s| s.family == Family::Hopper).collect();
    let (spec, shape) =
        choose::choose_offline(hopper.iter().copied(), &GemmOp::new(m, n, k), 132, &hgemm::Model::BUILT_IN)
            .expect("a kernel for every shape");
    (spec.name, shape.split.is_some())
}

fn shape(cell: &str) -> (usize, usize, usize) {
    let d: Vec<usize> = cell.split('×').map(|x| x.trim().parse().unwrap()).collect();
    (d[0], d[1], d[2])
}

/// Rows of the markdown tables in `doc` whose header starts with `header`.
fn table_rows<'a>(doc: &'a str, header: &str) -> Vec<Vec<&'a str>> {
    let mut rows = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.starts_with(header) {
            lines.next(); // |---|
            for row in lines.by_ref().take_while(|l| l.starts_with('|')) {
                rows.push(row.trim_matches('|').split('|').map(str::trim).collect());
            }
        }
    }
    rows
}

#[test]
fn the_tables_name_the_kernels_auto_runs() {
    let readme = include_str!("../../README.md");
    // The sweep: "split" and "kernel" are its last two columns.
    let sweep = table_rows(readme, "| M×N×K | cuBLAS TFLOP/s | hgemm (auto) TFLOP/s | ratio | without stream-K");
    let mut checked = 0;
    for row in sweep.iter().filter(|r| r[0].contains('×')) {
        let (m, n, k) = shape(row[0]);
        let (kernel, split) = pick(m, n, k);
        let (said_split, said_kernel) = (row[row.len() - 2], row[row.len() - 1]);
        assert_eq!((said_kernel, said_split == "yes"), (kernel, split), "README sweep row {}", row[0]);
        checked += 1;
    }
    assert_eq!(checked, 12, "the sweep table has the issue's twelve shapes");
    // Beyond the sweep (`docs/shapes.md`): "kernel" reads `wide`, or the entry's name after
    // `hopper_v7_`, and ", split" where the schedule splits.
    let doc = include_str!("../../docs/shapes.md");
    let beyond = table_rows(doc, "| M×N×K | cuBLAS TFLOP/s | hgemm (auto) TFLOP/s | ratio | kernel |");
    assert!(beyond.len() >= 60, "the beyond-the-sweep tables: {} rows", beyond.len());
    for row in &beyond {
        let (m, n, k) = shape(row[0]);
        let (kernel, split) = pick(m, n, k);
        let said = row[4];
        let (name, said_split) = match said.strip_suffix(", split") {
            Some(name) => (name, true),
            None => (said, false),
        };
        let name = if name == "wide" { "hopper_v7".to_string() } else { format!("hopper_v7_{name}") };
        assert_eq!((name.as_str(), said_split), (kernel, split), "docs/shapes.md row {}", row[0]);
    }
}

#[test]
fn plan_runs_without_a_gpu() {
    let hgemm = env!("CARGO_BIN_EXE_hgemm");
    let out =
        Command::new(hgemm).args(["plan", "--shapes", "8192x8192x8192,128x8192x8192,16x28672x4096"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 3, "{text}");
    // The CTAs column (the third, right-aligned) ends at the same place in every line, however
    // long the kernel's name.
    let ends: Vec<usize> = text.lines().map(|l| field_end(l, 3)).collect();
    assert!(ends.iter().all(|&e| e == ends[0]), "{text}");
    assert_eq!(&rows[0][..4], ["8192x8192x8192", "hopper_v7", "132", "2"], "{text}");
    assert!(rows[0][4].starts_with("stream-K"), "{text}");
    // The split itself: 14 whole waves of 66 pairs, the last 100 units' K blocks over 66 pairs.
    assert!(text.lines().nth(1).unwrap().ends_with("(924 of 1024 units whole, shares of 194 K blocks)"), "{text}");
    assert_eq!(&rows[1][..2], ["128x8192x8192", pick(128, 8192, 8192).0], "{text}");
    // The sweep by default; a bad SM count is an error, not a guess.
    let all = Command::new(hgemm).arg("plan").output().unwrap();
    assert_eq!(String::from_utf8(all.stdout).unwrap().lines().count(), 13);
    let bad = Command::new(hgemm).args(["plan", "--sms", "0"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--sms"));
}

#[test]
fn the_llm_table_is_what_plan_llm_runs() {
    // The table of LLM layers (`docs/shapes.md`) has a row per N×K and a column per M; its bold
    // cells are the shapes where `auto` runs a 160-column tile in many columns (the rule of
    // 1e44dc6, 2026-11-30). `hgemm plan --llm` must list the same 90 shapes.
    let doc = include_str!("../../docs/shapes.md");
    let rows = table_rows(doc, "| N×K | layer | M = 256 |");
    let header = doc.lines().find(|l| l.starts_with("| N×K | layer | M = 256 |")).unwrap();
    let ms: Vec<usize> = header
        .trim_matches('|')
        .split('|')
        .skip(2)
        .map(|c| c.trim().trim_start_matches("M = ").parse().unwrap())
        .collect();
    let mut shapes = Vec::new();
    for row in &rows {
        let nk: Vec<usize> = row[0].split('×').map(|x| x.parse().unwrap()).collect();
        for (cell, &m) in row[2..].iter().zip(&ms) {
            let (kernel, _) = pick(m, nk[0], nk[1]);
            let trimmed = kernel.starts_with("hopper_v7_trim") || kernel.starts_with("hopper_v7_midtrim");
            assert_eq!(cell.starts_with("**"), trimmed, "docs/shapes.md LLM cell {m}x{}x{}: {kernel}", nk[0], nk[1]);
            shapes.push(format!("{m}x{}x{}", nk[0], nk[1]));
        }
    }
    assert_eq!(shapes.len(), 90);
    let out = Command::new(env!("CARGO_BIN_EXE_hgemm")).args(["plan", "--llm"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    listed.sort();
    shapes.sort();
    assert_eq!(listed, shapes);
}

#[test]
fn plan_why_lists_the_prices_auto_weighs() {
    let out = Command::new(env!("CARGO_BIN_EXE_hgemm"))
        .args(["plan", "--why", "--shapes", "8192x8192x8192,229x5120x13824"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // Each shape's line, then its entries indented, cheapest first (price, name, eligible); the
    // pick is among them.
    type Priced<'a> = (f64, &'a str, bool);
    let mut blocks: Vec<(Vec<&str>, Vec<Priced>)> = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with(' ') {
            blocks.last_mut().unwrap().1.push((f[0].parse().unwrap(), f[1], !line.contains("kept out")));
        } else {
            blocks.push((f, Vec::new()));
        }
    }
    assert_eq!(blocks.len(), 2, "{text}");
    for (head, priced) in &blocks {
        assert!(priced.windows(2).all(|w| w[0].0 <= w[1].0), "{text}");
        assert!(
            priced.iter().any(|p| p.1 == head[1] && p.2),
            "{}: the pick is not listed as eligible\n{text}",
            head[0]
        );
    }
    // At 8192³ the pick is the cheapest entry; at 229×5120×13824 whole trim tiles priced within
    // 6% take the call from the cheaper square pairs, split with fewer units than pairs.
    assert_eq!(blocks[0].1.iter().find(|p| p.2).unwrap().1, "hopper_v7", "{text}");
    let eligible: Vec<&str> = blocks[1].1.iter().filter(|p| p.2).map(|p| p.1).collect();
    assert_eq!((eligible[0], blocks[1].0[1]), ("hopper_v7_square_kk", "hopper_v7_trim_kk"), "{text}");
    // The pick's line says so, and where a rule overruled the cheaper entries, that it did.
    let (first, second) = text.split_once("\n229x5120x13824 ").unwrap();
    let note = |block: &str, name: &str| {
        block.lines().find(|l| l.starts_with(' ') && l.split_whitespace().nth(1) == Some(name)).unwrap().to_string()
    };
    assert!(note(first, "hopper_v7").ends_with("(auto's pick)"), "{text}");
    assert!(
        note(second, "hopper_v7_trim_kk").ends_with(
            "(auto's pick: `choose::choose`'s rule THIN_SQUARE_SPLIT prefers it to the cheaper entries above)"
        ),
        "{text}"
    );
    assert!(!note(second, "hopper_v7_square_kk").contains("pick"), "{text}");
}

/// `--rule NAME` keeps the shapes that rule took from the cheapest entry, and nothing else; a
/// name that is no rule is an error that lists the rules.
#[test]
fn plan_rule_lists_the_moves_of_one_rule() {
    let run = |rule: &str| {
        Command::new(env!("CARGO_BIN_EXE_hgemm"))
            .args([
                "plan",
                "--rule",
                rule,
                "--shapes",
                "8192x8192x8192,229x5120x13824,4864x2176x4096,836x15360x5120,12800x128x2048",
            ])
            .output()
            .unwrap()
    };
    let shapes = |out: &std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    // Cheapest is the tall tile split; the rule gives the call to the wide tile trimmed, whole.
    assert_eq!(shapes(&run("TALL_SPLIT")), ["836x15360x5120"]);
    assert_eq!(shapes(&run("THIN_SQUARE_SPLIT")), ["229x5120x13824"]);
    assert_eq!(shapes(&run("ONE_COLUMN_SQUARE")), ["12800x128x2048"]);
    let bad = run("WIDE");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("want one of ONE_COLUMN_SQUARE, THIN_SQUARE_SPLIT, TALL_SPLIT")
    );
}

/// A reader that stops early (`hgemm plan --why --llm | head -1`) ends the command without a
/// panic on stderr.
#[test]
fn plan_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hgemm"))
        .args(["plan", "--why", "--llm"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("MxNxK"), "{first}");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Where the `n`-th whitespace-separated field of `line` ends (1-based), in bytes.
fn field_end(line: &str, n: usize) -> usize {
    let (mut fields, mut in_field) = (0, false);
    for (i, c) in line.char_indices() {
        match (in_field, c.is_whitespace()) {
            (false, false) => (fields, in_field) = (fields + 1, true),
            (true, true) if fields == n => return i,
            (true, true) => in_field = false,
            _ => {}
        }
    }
    line.len()
}

/// `hgemm tune` on a machine without a GPU says so in one sentence and fails; with one, it prints
/// a line for the shape, and the table it saves reads back.
#[test]
fn tune_says_what_it_did_or_why_not() {
    let table = std::env::temp_dir().join(format!("hgemm-tune-test-{}.txt", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_hgemm"))
        .args(["tune", "--shapes", "512x1024x256", "--samples", "1", "--sample-ms", "1", "--out"])
        .arg(&table)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        assert!(stdout.lines().any(|l| l.starts_with("512x1024x256 ")), "{stdout}");
        let text = std::fs::read_to_string(&table).unwrap();
        assert!(
            text.starts_with("hgemm tuning 1\ndevice ")
                && text.contains("\n512 1024 256 1 row col row plain stream-k "),
            "{text}"
        );
        let _ = std::fs::remove_file(&table);
    } else {
        assert!(stderr.starts_with("hgemm: ") && stderr.trim_end().lines().count() == 1, "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!table.exists());
    }
}

/// `hgemm plan --family blackwell` prices Blackwell's library entries on a 148-SM B200 by default,
/// for the call the layout, beta and batch options describe, the entry reading its orders (in
/// the form it computes: a column-major C is Cᵀ = Bᵀ·Aᵀ); the same options plan for Hopper; a
/// ragged C is taken by either family.
#[test]
fn plan_takes_the_family_and_the_call() {
    let plan = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hgemm")).arg("plan").args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let row = |text: &str| text.lines().nth(1).unwrap().split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let (ok, text, err) = plan(&["--family", "blackwell", "--shapes", "8192x8192x8192"]);
    assert!(ok, "{err}");
    // 32 × 32 units of 256×256 on 74 pairs: every SM, 13 whole waves and the 62 units left
    // dealt out by K (stream-K).
    assert_eq!(row(&text)[..4], ["8192x8192x8192", "blackwell_lib_kk", "148", "2"], "{text}");
    assert!(text.lines().nth(1).unwrap().ends_with("(962 of 1024 units whole, shares of 108 K blocks)"), "{text}");
    // 304×520 takes 2 × 3 units of 256×256 tiles (36 CTAs for 3 entries) or 2 × 5 of 256×128
    // (60); turned round (C column-major), 520×304 takes 3 × 3 of 256×128 (54): the narrow tile,
    // whose waves are as few and whose tiles half the work.
    for (a, b, c, entry, ctas) in [
        ("row", "col", "row", "blackwell_lib_n128_kk", "60"),
        ("col", "col", "row", "blackwell_lib_n128_mnk", "60"),
        ("row", "row", "row", "blackwell_lib_n128_kmn", "60"),
        ("col", "row", "row", "blackwell_lib_n128_mnmn", "60"),
        // C column-major: A and B trade places and read the other way round.
        ("row", "col", "col", "blackwell_lib_n128_kk", "54"),
        ("col", "col", "col", "blackwell_lib_n128_kmn", "54"),
        ("row", "row", "col", "blackwell_lib_n128_mnk", "54"),
    ] {
        let (ok, text, err) = plan(&[
            "--family",
            "blackwell",
            "--shapes",
            "304x520x72",
            "--a-layout",
            a,
            "--b-layout",
            b,
            "--c-layout",
            c,
            "--beta",
            "0.5",
            "--batch",
            "3",
        ]);
        assert!(ok, "{a} {b} {c}: {err}");
        let r = row(&text);
        assert_eq!(r[1], entry, "{a} {b} {c}: {text}");
        assert_eq!((r[2].as_str(), r[3].as_str()), (ctas, "2"), "{a} {b} {c}: {text}");
    }
    // The SM count is the user's to set; Hopper takes the same call options.
    let (ok, text, _) = plan(&["--family", "blackwell", "--sms", "160", "--shapes", "8192x8192x8192"]);
    assert!(ok && row(&text)[2] == "160", "{text}");
    let (ok, text, err) =
        plan(&["--shapes", "300x520x72", "--a-layout", "col", "--b-layout", "row", "--beta", "1", "--batch", "2"]);
    assert!(ok, "{err}");
    let spec = row(&text)[1].clone();
    let hopper = hgemm_kernels::kernels().find(|s| s.name == spec).unwrap();
    assert_eq!(
        (hopper.family, hopper.a_major, hopper.b_major),
        (Family::Hopper, hgemm_kernels::spec::Major::MN, hgemm_kernels::spec::Major::MN),
        "{text}"
    );
    // A C that TMA cannot write whole (N = 301, column-major M = 301): stored by the threads, on
    // either family.
    for family in ["blackwell", "hopper"] {
        for c in ["row", "col"] {
            let (ok, text, err) = plan(&["--family", family, "--shapes", "301x301x64", "--c-layout", c]);
            assert!(ok && row(&text)[1].starts_with(family), "{family} C {c}: {err}{text}");
        }
    }
}

/// `--score FILE` looks each surveyed shape's pick up among the entries the survey timed: a
/// timed pick counts, an untimed one is said, and a line that is no survey line names the file
/// and the line.
#[test]
fn plan_score_reads_auto_s_picks_off_a_survey() {
    let (wide, _) = pick(8192, 8192, 8192);
    let (small, small_split) = pick(64, 64, 64);
    let dir = std::env::temp_dir().join(format!("hgemm-score-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("survey.jsonl");
    // 8192³: the pick (the wide tile split) at cuBLAS's time, another entry 1.25× as fast; 64³:
    // only an entry that is not the pick.
    let other = if small == "hopper_v7_thin_kk" { "hopper_v7_slim_kk" } else { "hopper_v7_thin_kk" };
    std::fs::write(
        &file,
        format!(
            "{{\"m\":8192,\"n\":8192,\"k\":8192,\"cublas\":2.0,\"auto\":[\"{wide}\",true],\"timed\":[[\"{wide}\",true,2.0],[\"hopper_v7_mid_kk\",false,1.6]]}}\n\
             {{\"m\":64,\"n\":64,\"k\":64,\"cublas\":0.01,\"auto\":[\"{small}\",{small_split}],\"timed\":[[\"{other}\",false,0.02]]}}\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hgemm")).args(["plan", "--score"]).arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line =
        |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{text}")).to_string();
    let big = line("8192x8192x8192");
    assert!(big.contains(wide) && big.contains("1.000") && big.contains("1.250 hopper_v7_mid_kk whole"), "{big}");
    assert!(line("64x64x64").contains("untimed"), "{text}");
    assert!(
        text.contains("over 1 shapes: auto's picks 1.000x cuBLAS (0 below 0.95), the fastest timed entry 1.250x")
            && text.contains("1 picks the survey did not time"),
        "{text}"
    );
    // `--residuals`: each timed entry's time over its price, against the shape's median entry.
    let out =
        Command::new(env!("CARGO_BIN_EXE_hgemm")).args(["plan", "--residuals", "--score"]).arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let row = |name: &str| text.lines().find(|l| l.contains(&format!(" {name} "))).unwrap_or_else(|| panic!("{text}"));
    assert!(
        row(wide).contains("split  at 1 shapes") && row("hopper_v7_mid_kk").contains("whole  at 1 shapes"),
        "{text}"
    );
    // Two entries at one shape: the median is the slower relative to its price, which reads 1.
    assert!(text.lines().filter(|l| l.trim_start().starts_with("1.000")).count() >= 1, "{text}");
    // A line that is not a survey line.
    std::fs::write(&file, "{\"m\":1}\n").unwrap();
    let bad = Command::new(env!("CARGO_BIN_EXE_hgemm")).args(["plan", "--score"]).arg(&file).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("survey.jsonl line 1: missing field"), "{bad:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
