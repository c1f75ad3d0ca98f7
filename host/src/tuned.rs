//! Tuned choices: what a choice of kernel is keyed by, the table of choices measured on one
//! device and its text format, and how a call's choice is made from the table and `auto`'s price.
//! Plain data; the measuring is [`crate::tune`]'s.

use crate::choose;
use crate::error::{Error, Result};
use crate::op::{GemmOp, Layout};
use crate::plan;
use hgemm_kernels::spec::{Family, KernelSpec};
use hgemm_kernels::staging::tma_can_write;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::RwLock;

/// What a tuned choice is keyed by: everything about a call that the choice of kernel depends on
/// (sizes, storage orders, whether the epilogue scales, whether splitting is allowed), not the
/// buffers, leading dimensions, strides or the values of alpha and beta.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TuneKey {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// The shared dimension.
    pub k: usize,
    /// GEMMs in the batch.
    pub batch: usize,
    /// Storage order of A.
    pub a: Layout,
    /// Storage order of B.
    pub b: Layout,
    /// Storage order of C.
    pub c: Layout,
    /// alpha = 1 and beta = 0 ([`GemmOp::plain_epilogue`]).
    pub plain_epilogue: bool,
    /// The call allows stream-K splitting ([`GemmOp::stream_k`](GemmOp#structfield.stream_k)).
    pub stream_k: bool,
}

impl TuneKey {
    /// The key of `op`.
    pub fn of(op: &GemmOp) -> TuneKey {
        TuneKey {
            m: op.m,
            n: op.n,
            k: op.k,
            batch: op.batch,
            a: op.a_layout,
            b: op.b_layout,
            c: op.c_layout,
            plain_epilogue: op.plain_epilogue(),
            stream_k: op.stream_k,
        }
    }

    /// A dense call with this key (leading dimensions and strides as tight as the sizes allow;
    /// alpha 1 and beta 0, or beta 1 for a key whose epilogue scales).
    pub fn op(&self) -> GemmOp {
        let ld = |layout: Layout, rows: usize, cols: usize| if layout == Layout::RowMajor { cols } else { rows };
        let op = GemmOp::new(self.m, self.n, self.k)
            .a(self.a, ld(self.a, self.m, self.k))
            .b(self.b, ld(self.b, self.k, self.n))
            .c(self.c, ld(self.c, self.m, self.n))
            .stream_k(self.stream_k);
        let op = if self.plain_epilogue { op } else { op.beta(1.0) };
        if self.batch == 1 { op } else { op.batched(self.batch, op.stride_a, op.stride_b, op.stride_c) }
    }
}

/// A kernel choice: the entry, and whether its schedule may split the last waves by K (a tuned
/// choice may run an entry whole where the call allows splitting; never the other way round).
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    /// The entry.
    pub kernel: &'static KernelSpec,
    /// Its last waves may be split by K.
    pub split: bool,
}

impl PartialEq for Choice {
    fn eq(&self, other: &Choice) -> bool {
        self.kernel.name == other.kernel.name && self.split == other.split
    }
}

impl Choice {
    /// `op` as this choice runs it: splitting only where both the call and the choice allow it.
    pub fn op(&self, op: &GemmOp) -> GemmOp {
        op.stream_k(op.stream_k && self.split)
    }

    /// The entry's name, with " whole" where the call would allow a split this choice forgoes.
    pub fn describe(&self, key: &TuneKey) -> String {
        if key.stream_k && !self.split { format!("{} whole", self.kernel.name) } else { self.kernel.name.to_string() }
    }

    /// What `auto`'s price picks for `op` among `kernels` ([`choose::choose`]) on a device of
    /// `sms` SMs, or on the call's SM budget where it sets a smaller one ([`GemmOp::max_sms`]),
    /// splitting where the call allows it and the price splits.
    pub fn priced(
        kernels: impl Iterator<Item = &'static KernelSpec>,
        op: &GemmOp,
        sms: u32,
        model: &choose::Model,
    ) -> Option<Choice> {
        choose::choose_why(kernels, op, op.sms_on(sms), model).map(|(p, _)| Choice { kernel: p.spec, split: p.split() })
    }
}

/// What `auto` runs for `op` with C at device address `c`: the `tuned` choice for its key where
/// that entry takes this call, else the one of `kernels` that `auto`'s price picks
/// ([`choose::choose`]). A tuned choice is keyed by what the choice of kernel depends on for aligned
/// operands, not by C's leading dimension, batch stride or address, which may rule its entry
/// out: an entry that writes C column-major needs all three on 16-byte chunks, and `choose`,
/// which sees no address, is left the others where C starts mid-chunk.
pub fn pick(
    tuned: Option<Choice>,
    kernels: impl Iterator<Item = &'static KernelSpec>,
    op: &GemmOp,
    c: u64,
    sms: u32,
    model: &choose::Model,
) -> Option<Choice> {
    pick_with(tuned, op, c, |col_major_writable| priced_for(kernels, op, sms, model, col_major_writable))
}

/// [`pick`] with the price left to `priced`, which is told whether entries that write C
/// column-major can write this C.
pub(crate) fn pick_with(
    tuned: Option<Choice>,
    op: &GemmOp,
    c: u64,
    priced: impl FnOnce(bool) -> Option<Choice>,
) -> Option<Choice> {
    // (C's leading dimension and batch stride describe the same memory in either form of the call.)
    let col_major_writable = tma_can_write(c, op.ldc as u64, op.stride_c as u64, op.batch as u32);
    match tuned {
        Some(t) if (col_major_writable || !t.kernel.c_col_major) && plan::supports(t.kernel, op).is_ok() => Some(t),
        _ => priced(col_major_writable),
    }
}

/// What `auto`'s price picks for `op` among `kernels`, leaving out those that write C
/// column-major unless `col_major_writable`.
pub(crate) fn priced_for(
    kernels: impl Iterator<Item = &'static KernelSpec>,
    op: &GemmOp,
    sms: u32,
    model: &choose::Model,
    col_major_writable: bool,
) -> Option<Choice> {
    Choice::priced(kernels.filter(|k| col_major_writable || !k.c_col_major), op, sms, model)
}

/// `auto`'s priced choices by call, for one handle (its kernels and SM count fixed, its model
/// fixed until [`Gemm::set_model`](crate::Gemm::set_model) replaces the cache): a call like one
/// made before skips the price, which weighs every entry's schedules (1.6–2.2 µs a call on the CI
/// machine, a third of what `gemm` costs the host). The price depends on nothing else, so nothing
/// else invalidates an entry; tuned choices are looked up before it. Bounded: it starts again
/// empty once it holds [`PriceCache::CAPACITY`] calls (a program of ever new shapes pays the
/// price it paid without the cache).
pub(crate) struct PriceCache(RwLock<HashMap<PriceKey, Option<Choice>>>);

/// Every field of a call ([`choose::choose`] may read any), alpha and beta by their bits, and
/// whether entries that write C column-major can write its C.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct PriceKey {
    sizes: [usize; 11],
    layouts: [Layout; 3],
    scales: [u32; 2],
    epilogue: u32,
    stream_k: bool,
    max_sms: Option<u32>,
    col_major_writable: bool,
}

impl PriceKey {
    fn of(op: &GemmOp, col_major_writable: bool) -> PriceKey {
        // Without `..`: a field added to `GemmOp` fails to compile here until the key has it.
        let GemmOp {
            m,
            n,
            k,
            a_layout,
            lda,
            b_layout,
            ldb,
            c_layout,
            ldc,
            alpha,
            beta,
            batch,
            stride_a,
            stride_b,
            stride_c,
            stream_k,
            bias: _,
            bias_stride,
            activation: _,
            gated: _,
            max_sms,
        } = *op;
        PriceKey {
            sizes: [m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c, bias_stride],
            layouts: [a_layout, b_layout, c_layout],
            scales: [alpha.to_bits(), beta.to_bits()],
            epilogue: op.epilogue().0,
            stream_k,
            max_sms,
            col_major_writable,
        }
    }
}

impl PriceCache {
    /// Calls held before it starts again empty.
    pub(crate) const CAPACITY: usize = 4096;

    pub(crate) fn new() -> PriceCache {
        PriceCache(RwLock::new(HashMap::new()))
    }

    /// The choice held for `op` and `col_major_writable`, or `price()`'s, kept for the next such call.
    pub(crate) fn get(
        &self,
        op: &GemmOp,
        col_major_writable: bool,
        price: impl FnOnce() -> Option<Choice>,
    ) -> Option<Choice> {
        let key = PriceKey::of(op, col_major_writable);
        if let Some(&held) = self.0.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return held;
        }
        let choice = price();
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= Self::CAPACITY {
            map.clear();
        }
        map.insert(key, choice);
        choice
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.read().unwrap().len()
    }
}

/// Tuned choices for one device: a kernel per [`TuneKey`].
#[derive(Clone, Debug, PartialEq)]
pub struct TuneTable {
    family: Family,
    device: String,
    sms: u32,
    choices: HashMap<TuneKey, Choice>,
}

/// The first line of a table's text, with its format's version.
const HEADER: &str = "hgemm tuning 1";

impl TuneTable {
    /// An empty table for `family`'s kernels on the device named `device` with `sms` SMs.
    pub fn new(family: Family, device: &str, sms: u32) -> TuneTable {
        TuneTable { family, device: device.to_string(), sms, choices: HashMap::new() }
    }

    /// Forget every choice; the table stays this device's.
    pub fn clear(&mut self) {
        self.choices.clear();
    }

    /// Choices held.
    pub fn len(&self) -> usize {
        self.choices.len()
    }

    /// No choice held.
    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }

    /// The device the choices were measured on, and its SMs.
    pub fn device(&self) -> (&str, u32) {
        (&self.device, self.sms)
    }

    /// The tuned choice for `op`, if its shape was tuned and the entry can compute it (a key
    /// does not hold what [`plan::supports`] also checks: C's contiguous size, for instance, is
    /// the key's, but the entry was checked against the tuned call, not this one).
    pub fn get(&self, op: &GemmOp) -> Option<Choice> {
        self.choices.get(&TuneKey::of(op)).copied().filter(|c| plan::supports(c.kernel, op).is_ok())
    }

    /// Hold `choice` for calls keyed as `op`: an entry of this table's family that computes `op`,
    /// splitting only if `op` allows it. A key no call can have (K not a multiple of 8, M, N or
    /// the batch zero or past 2^31 − 1) is an [`Error::Tuning`]: it would never be looked up.
    pub fn insert(&mut self, op: &GemmOp, choice: Choice) -> Result<()> {
        let tune_key = TuneKey::of(op);
        let key = shape(&tune_key);
        match op.validate_shape() {
            Ok(true) => {}
            Ok(false) => return Err(Error::Tuning(format!("{key}: no call of this shape computes anything"))),
            Err(e) => return Err(Error::Tuning(format!("{key}: {e}"))),
        }
        if choice.kernel.family != self.family {
            return Err(Error::Tuning(format!(
                "{} is a {} kernel; this table is for {}",
                choice.kernel.name,
                choice.kernel.family.name(),
                self.family.name()
            )));
        }
        if choice.split && !op.stream_k {
            return Err(Error::Tuning(format!("{} split by K for a call that forbids splitting", choice.kernel.name)));
        }
        // The shape is valid (above): the kernel's own checks are what is left of `supports`.
        plan::kernel_accepts(choice.kernel, op)
            .map_err(|e| Error::Tuning(format!("{} for {key}: {e}", choice.kernel.name)))?;
        self.choices.insert(tune_key, choice);
        Ok(())
    }

    /// Every choice with its key, in the text's order (by M, N, K and then the rest).
    pub fn entries(&self) -> Vec<(TuneKey, Choice)> {
        let mut v: Vec<_> = self.choices.iter().map(|(k, c)| (*k, *c)).collect();
        v.sort_by_key(|(k, _)| {
            (k.m, k.n, k.k, k.batch, layout(k.a), layout(k.b), layout(k.c), !k.plain_epilogue, !k.stream_k)
        });
        v
    }

    /// Add `other`'s choices, replacing this table's for the same keys; both must be of one device.
    pub fn merge(&mut self, other: TuneTable) -> Result<()> {
        self.same_device(&other.device, other.sms, other.family)?;
        self.choices.extend(other.choices);
        Ok(())
    }

    fn same_device(&self, device: &str, sms: u32, family: Family) -> Result<()> {
        // Names compared without their edge whitespace, which the text's lines do not keep.
        if (device.trim(), sms, family) != (self.device.trim(), self.sms, self.family) {
            return Err(Error::Tuning(format!(
                "tuned on {device} ({sms} SMs, {}), not this {} ({} SMs, {}): what is fastest depends on the device",
                family.name(),
                self.device,
                self.sms,
                self.family.name()
            )));
        }
        Ok(())
    }

    /// The table as text: a header, the device, then one line per choice
    /// (`M N K batch A B C epilogue split kernel schedule`, e.g.
    /// `512 5120 8192 1 row col row plain stream-k hopper_v7_midtrim_kk split`).
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\ndevice {} {} {}\n", self.family.name(), self.sms, self.device);
        s.push_str(
            "# M N K batch A B C epilogue(plain|scaled) splitting(stream-k|whole) kernel schedule(split|whole)\n",
        );
        for (k, c) in self.entries() {
            let _ = writeln!(
                s,
                "{} {} {} {} {} {} {} {} {} {} {}",
                k.m,
                k.n,
                k.k,
                k.batch,
                layout(k.a),
                layout(k.b),
                layout(k.c),
                if k.plain_epilogue { "plain" } else { "scaled" },
                if k.stream_k { "stream-k" } else { "whole" },
                c.kernel.name,
                if c.split { "split" } else { "whole" }
            );
        }
        s
    }

    /// Read [`TuneTable::to_text`]'s format. `family`, `device` and `sms` are the handle's: a
    /// table measured on another device, a kernel this build does not have, or a line that does
    /// not parse is an [`Error::Tuning`] naming the line; nothing is half-read.
    pub fn parse(text: &str, family: Family, device: &str, sms: u32) -> Result<TuneTable> {
        let mut table = TuneTable::new(family, device, sms);
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let bad = |n: usize, why: String| Error::Tuning(format!("line {n}: {why}"));
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((n, l)) => return Err(bad(n, format!("expected \"{HEADER}\", found \"{l}\""))),
            None => return Err(Error::Tuning("empty: no header".into())),
        }
        match lines.next() {
            Some((n, l)) => {
                let mut f = l.splitn(4, ' ');
                let (word, fam, count, name) = (f.next(), f.next(), f.next(), f.next());
                let fam = Family::ALL.into_iter().find(|x| Some(x.name()) == fam);
                match (word, fam, count.and_then(|c| c.parse::<u32>().ok()), name) {
                    (Some("device"), Some(fam), Some(count), Some(name)) => table.same_device(name, count, fam)?,
                    _ => return Err(bad(n, format!("expected \"device FAMILY SMS NAME\", found \"{l}\""))),
                }
            }
            None => return Err(Error::Tuning("no device line".into())),
        }
        for (n, l) in lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [m, nn, k, batch, a, b, c, epi, sk, kernel, sched] = f[..] else {
                return Err(bad(n, format!("expected 11 fields, found {}", f.len())));
            };
            let size =
                |s: &str, what: &str| s.parse::<usize>().map_err(|_| bad(n, format!("{what} \"{s}\" is not a size")));
            let order = |s: &str, what: &str| match s {
                "row" => Ok(Layout::RowMajor),
                "col" => Ok(Layout::ColMajor),
                _ => Err(bad(n, format!("{what} \"{s}\": want row or col"))),
            };
            let flag = |s: &str, yes: &str, no: &str| match s {
                _ if s == yes => Ok(true),
                _ if s == no => Ok(false),
                _ => Err(bad(n, format!("\"{s}\": want {yes} or {no}"))),
            };
            let key = TuneKey {
                m: size(m, "M")?,
                n: size(nn, "N")?,
                k: size(k, "K")?,
                batch: size(batch, "batch")?,
                a: order(a, "A")?,
                b: order(b, "B")?,
                c: order(c, "C")?,
                plain_epilogue: flag(epi, "plain", "scaled")?,
                stream_k: flag(sk, "stream-k", "whole")?,
            };
            let spec = hgemm_kernels::kernels()
                .find(|s| s.name == kernel && s.family == family)
                .ok_or_else(|| bad(n, format!("no {} kernel {kernel} in this build", family.name())))?;
            let choice = Choice { kernel: spec, split: flag(sched, "split", "whole")? };
            table.insert(&key.op(), choice).map_err(|e| match e {
                Error::Tuning(why) => bad(n, why),
                e => bad(n, e.to_string()),
            })?;
        }
        Ok(table)
    }
}

fn layout(l: Layout) -> &'static str {
    match l {
        Layout::RowMajor => "row",
        Layout::ColMajor => "col",
    }
}

/// `M×N×K` (and the batch, if any) of a key.
pub fn shape(k: &TuneKey) -> String {
    if k.batch == 1 {
        format!("{}x{}x{}", k.m, k.n, k.k)
    } else {
        format!("{}x{}x{} (batch {})", k.m, k.n, k.k, k.batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::Model;

    fn hopper(name: &str) -> &'static KernelSpec {
        hgemm_kernels::kernels().find(|k| k.name == name && k.family == Family::Hopper).expect(name)
    }

    fn table() -> TuneTable {
        let mut t = TuneTable::new(Family::Hopper, "NVIDIA H200", 132);
        t.insert(&GemmOp::new(512, 5120, 8192), Choice { kernel: hopper("hopper_v7_midtrim_kk"), split: true })
            .unwrap();
        t.insert(&GemmOp::new(256, 22016, 4096), Choice { kernel: hopper("hopper_v7_mid_kk"), split: false }).unwrap();
        let scaled = GemmOp::new(1000, 1000, 1000)
            .b(Layout::RowMajor, 1000)
            .c(Layout::ColMajor, 1000)
            .beta(1.0)
            .batched(3, 1000 * 1000, 1000 * 1000, 1000 * 1000);
        let pick = choose::choose(
            hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper),
            &scaled,
            132,
            &Model::BUILT_IN,
        )
        .unwrap();
        t.insert(&scaled, Choice { kernel: pick, split: true }).unwrap();
        t.insert(&GemmOp::new(64, 64, 64).stream_k(false), Choice { kernel: hopper("hopper_v7"), split: false })
            .unwrap();
        t
    }

    #[test]
    fn a_table_reads_back_what_it_wrote() {
        let t = table();
        let text = t.to_text();
        assert!(text.contains("512 5120 8192 1 row col row plain stream-k hopper_v7_midtrim_kk split"), "{text}");
        assert!(text.contains("1000 1000 1000 3 row row col scaled stream-k hopper_v7_"), "{text}");
        let back = TuneTable::parse(&text, Family::Hopper, "NVIDIA H200", 132).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.to_text(), text);
        assert_eq!(back.len(), 4);
    }

    #[test]
    fn a_choice_is_found_by_what_the_kernel_choice_depends_on() {
        let t = table();
        let op = GemmOp::new(256, 22016, 4096);
        assert_eq!(t.get(&op).map(|c| c.kernel.name), Some("hopper_v7_mid_kk"));
        // Leading dimensions and alpha ≠ 1 with beta do not change the key's epilogue class…
        let wide = op.a(Layout::RowMajor, 4104).c(Layout::RowMajor, 22024);
        assert_eq!(t.get(&wide).map(|c| c.kernel.name), Some("hopper_v7_mid_kk"));
        // …but a scaled epilogue, another order, a batch, or forbidding the split do.
        assert!(t.get(&op.beta(1.0)).is_none());
        assert!(t.get(&op.c(Layout::ColMajor, 256)).is_none());
        assert!(t.get(&op.batched(2, 256 * 4096, 22016 * 4096, 256 * 22016)).is_none());
        assert!(t.get(&op.stream_k(false)).is_none());
        // The choice runs the call whole where it says so, and never splits what the call forbids.
        let c = t.get(&op).unwrap();
        assert!(!c.op(&op).stream_k);
        let split = Choice { kernel: hopper("hopper_v7"), split: true };
        assert!(!split.op(&op.stream_k(false)).stream_k);
    }

    #[test]
    fn the_priced_choice_runs_whole_where_the_price_weighed_the_entry_whole() {
        let hopper_kernels = || hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper);
        // Bound by DRAM, 98×5120×5120 runs the 64×96 pair whole (`choose::price`); a call that
        // splits where the price keeps the split.
        let whole = GemmOp::new(98, 5120, 5120);
        let c = Choice::priced(hopper_kernels(), &whole, 132, &Model::BUILT_IN).unwrap();
        assert_eq!((c.kernel.name, c.split), ("hopper_v7_narrow96_kk", false));
        assert!(!c.op(&whole).stream_k);
        let split = GemmOp::new(8192, 8192, 8192);
        let c = Choice::priced(hopper_kernels(), &split, 132, &Model::BUILT_IN).unwrap();
        assert_eq!((c.kernel.name, c.split), ("hopper_v7", true));
        // What `plan` shows without a GPU is that launch: whole tiles, on 108 of 132 SMs.
        let (spec, shape) = choose::choose_offline(hopper_kernels(), &whole, 132, &Model::BUILT_IN).unwrap();
        assert_eq!((spec.name, shape.grid * shape.grid_y, shape.split), ("hopper_v7_narrow96_kk", 108, None));
    }

    #[test]
    fn a_tuned_choice_gives_way_where_its_entry_cannot_write_c() {
        let hopper_kernels = || hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper);
        let op = GemmOp::new(160, 8192, 8192);
        let priced = choose::choose(hopper_kernels(), &op, 132, &Model::BUILT_IN).unwrap();
        assert!(priced.c_col_major, "{}", priced.name);
        let tuned = Some(Choice { kernel: hopper("hopper_v7_lean_kk_cm"), split: true });
        assert_eq!(pick(tuned, hopper_kernels(), &op, 0x1000, 132, &Model::BUILT_IN), tuned);
        // C from its fifth element, or its rows 8196 elements apart: no entry that writes C
        // column-major takes it, tuned or priced.
        for (op, c) in [(op, 0x1008), (op.c(Layout::RowMajor, 8196), 0x1000)] {
            for tuned in [tuned, None] {
                let p = pick(tuned, hopper_kernels(), &op, c, 132, &Model::BUILT_IN).unwrap();
                assert!(!p.kernel.c_col_major && plan::supports(p.kernel, &op).is_ok(), "{} at {c:#x}", p.kernel.name);
            }
        }
    }

    #[test]
    fn the_price_cache_answers_what_the_price_answers() {
        let hopper_kernels = || hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper);
        let cache = PriceCache::new();
        let priced = std::cell::Cell::new(0);
        let cached = |op: &GemmOp, c: u64| {
            pick_with(None, op, c, |col_major_writable| {
                cache.get(op, col_major_writable, || {
                    priced.set(priced.get() + 1);
                    priced_for(hopper_kernels(), op, 132, &Model::BUILT_IN, col_major_writable)
                })
            })
        };
        // Calls that differ from the one before in one field each, most of them choosing another
        // entry or split: a key that left a field out would answer one with the other's choice.
        let base = GemmOp::new(160, 8192, 8192);
        let ops = [
            base,
            base.stream_k(false),
            base.beta(1.0),
            base.alpha(0.5),
            base.c(Layout::ColMajor, 160),
            base.c(Layout::RowMajor, 8200),
            base.a(Layout::ColMajor, 160),
            base.b(Layout::RowMajor, 8192),
            base.batched(2, 160 * 8192, 8192 * 8192, 160 * 8192),
            GemmOp::new(8192, 160, 8192),
            GemmOp::new(8192, 8192, 8192),
            GemmOp::new(8192, 8192, 8192).stream_k(false),
            GemmOp::new(64, 64, 64),
            GemmOp::new(64, 64, 7),
            // An SM budget prices on fewer SMs, and one SM leaves only entries without a cluster.
            GemmOp::new(8192, 8192, 8192).max_sms(100),
            base.max_sms(1),
        ];
        let mut distinct = Vec::new();
        for round in 0..2 {
            for op in &ops {
                // C at a 16-byte chunk, and from its fifth element (no column-major entry then).
                for c in [0x1000, 0x1008] {
                    let direct = pick(None, hopper_kernels(), op, c, 132, &Model::BUILT_IN);
                    assert_eq!(cached(op, c), direct, "{op:?} at {c:#x}, round {round}");
                    if !distinct.contains(&direct) {
                        distinct.push(direct);
                    }
                }
            }
            if round == 0 {
                assert!(priced.get() > ops.len(), "{} prices", priced.get());
            }
        }
        assert!(distinct.len() >= 6, "{distinct:?}");
        // The second round was answered from the cache alone.
        assert_eq!(priced.get(), cache.len());
    }

    #[test]
    fn the_price_cache_starts_again_when_full() {
        let cache = PriceCache::new();
        for m in 1..=PriceCache::CAPACITY + 1 {
            cache.get(&GemmOp::new(m, 64, 64), true, || None);
            assert!(cache.len() <= PriceCache::CAPACITY);
        }
        assert_eq!(cache.len(), 1);
        let v7 = Some(Choice { kernel: hopper("hopper_v7"), split: true });
        let op = GemmOp::new(PriceCache::CAPACITY + 1, 64, 64);
        assert_eq!(cache.get(&op, true, || v7), None, "held from its first call");
        assert_eq!(cache.get(&op, false, || v7), v7, "another key");
    }

    #[test]
    fn a_table_refuses_what_does_not_fit() {
        let mut t = TuneTable::new(Family::Hopper, "NVIDIA H200", 132);
        let v3 = hopper("hopper_v3");
        let err = t.insert(&GemmOp::new(128, 128, 64).beta(1.0), Choice { kernel: v3, split: false }).unwrap_err();
        assert!(matches!(&err, Error::Tuning(s) if s.contains("hopper_v3") && s.contains("alpha = 1")), "{err}");
        let err = t
            .insert(&GemmOp::new(128, 128, 64).stream_k(false), Choice { kernel: hopper("hopper_v7"), split: true })
            .unwrap_err();
        assert!(matches!(&err, Error::Tuning(s) if s.contains("forbids")), "{err}");
        if let Some(b) = hgemm_kernels::kernels().find(|k| k.family == Family::Blackwell && k.general) {
            let err = t.insert(&GemmOp::new(128, 128, 64), Choice { kernel: b, split: true }).unwrap_err();
            assert!(matches!(&err, Error::Tuning(s) if s.contains("blackwell")), "{err}");
        }
        assert!(t.is_empty());
    }

    #[test]
    fn parsing_names_the_line_and_the_reason() {
        let text = table().to_text();
        let parse = |s: &str| TuneTable::parse(s, Family::Hopper, "NVIDIA H200", 132).unwrap_err().to_string();
        assert!(parse("").contains("empty"));
        assert!(parse("hgemm tuning 2\n").contains("line 1"));
        let other = TuneTable::parse(&text, Family::Hopper, "NVIDIA H100 80GB HBM3", 132).unwrap_err().to_string();
        assert!(other.contains("NVIDIA H200") && other.contains("NVIDIA H100"), "{other}");
        // A driver name with edge whitespace still reads back its own table.
        let spaced = TuneTable::new(Family::Hopper, " NVIDIA H200 ", 132);
        assert!(TuneTable::parse(&spaced.to_text(), Family::Hopper, " NVIDIA H200 ", 132).is_ok());
        let fewer = TuneTable::parse(&text, Family::Hopper, "NVIDIA H200", 114).unwrap_err().to_string();
        assert!(fewer.contains("114 SMs"), "{fewer}");
        let line = |l: &str| parse(&format!("{HEADER}\ndevice hopper 132 NVIDIA H200\n{l}\n"));
        let v9 = line("512 5120 8192 1 row col row plain stream-k hopper_v9 split");
        assert!(v9.contains("line 3: no hopper kernel hopper_v9"), "{v9}");
        assert!(parse(&format!("{HEADER}\ndevice hopper many NVIDIA H200\n")).contains("line 2"));
        assert!(line("512 5120 8192 1 row col row plain stream-k hopper_v7").contains("11 fields, found 10"));
        assert!(line("512 5120 8192 1 row diag row plain stream-k hopper_v7 split").contains("\"diag\""));
        assert!(line("512 5120 -8 1 row col row plain stream-k hopper_v7 split").contains("K \"-8\""));
        assert!(line("512 5120 8192 1 row col row plain whole hopper_v7 split").contains("forbids"));
        // A ladder kernel that computes only the native problem, keyed by a scaled call.
        assert!(line("128 128 64 1 row col row scaled stream-k hopper_v3 whole").contains("line 3"));
        // Keys no call can have: they would be held and never looked up.
        let k7 = line("512 5120 7 1 row col row plain stream-k hopper_v7 split");
        assert!(k7.contains("line 3: 512x5120x7") && k7.contains("multiple of 8"), "{k7}");
        assert!(line("0 5120 8192 1 row col row plain stream-k hopper_v7 split").contains("computes anything"));
        assert!(line("512 5120 8192 0 row col row plain stream-k hopper_v7 split").contains("computes anything"));
        assert!(line("4294967296 64 64 1 row col row plain stream-k hopper_v7 split").contains("2^31"));
    }
}
