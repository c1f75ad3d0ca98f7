//! The handle's choice of kernel: `auto`'s pick, tuned choices first, and the tuning table.

use super::Gemm;
use crate::choose::Model;
use crate::error::Result;
use crate::op::GemmOp;
use crate::tuned::{self, Choice, PriceCache, TuneTable};
use hgemm_kernels::spec::KernelSpec;

impl Gemm {
    /// The kernel `gemm` would run for `op` (`None` if no kernel of this family reads its layout).
    pub fn choose(&self, op: &GemmOp) -> Option<&'static KernelSpec> {
        self.choice(op).map(|c| c.kernel)
    }

    /// What `gemm` runs for `op`: the tuned choice for its shape ([`Gemm::tune`]) if there is
    /// one, else [`Gemm::priced`].
    pub fn choice(&self, op: &GemmOp) -> Option<Choice> {
        self.choice_at(op, 0)
    }

    /// What `gemm` runs for `op` with C at device address `c` ([`tuned::pick`]): the tuned choice
    /// where its entry can write this C and keeps the SM budget (the call's and the handle's,
    /// [`Gemm::set_max_sms`]), else what `auto`'s price picks among those that can, priced on
    /// the budget's SMs.
    pub fn choice_at(&self, op: &GemmOp, c: u64) -> Option<Choice> {
        let op = &self.budgeted(op);
        tuned::pick_with(self.tuned(op), op, c, |col_major_writable| {
            self.prices.get(op, col_major_writable, || {
                tuned::priced_for(self.kernels(), op, self.info.sms, &self.model, col_major_writable)
            })
        })
    }

    /// What `auto`'s price picks for `op` ([`choose`](crate::choose::choose)) within the SM
    /// budget, whatever is tuned.
    pub fn priced(&self, op: &GemmOp) -> Option<Choice> {
        let op = &self.budgeted(op);
        Choice::priced(self.kernels(), op, self.info.sms, &self.model)
    }

    /// The model of this device that `auto`'s price reads ([`Model::BUILT_IN`] unless
    /// [`Gemm::set_model`] set another).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Price every later call with `model` (one [`Gemm::calibrate`] measured on this device, say,
    /// or loaded from its JSON with the `serde` feature). Refused with [`Error::InvalidModel`](crate::Error::InvalidModel)
    /// where it lacks a rate for one of this family's tiles or a quantity is out of range; the
    /// handle's model is then unchanged. Tuned choices are kept: they were measured.
    pub fn set_model(&mut self, model: Model) -> Result<()> {
        model.check(self.kernels())?;
        self.model = model;
        self.prices = PriceCache::new();
        Ok(())
    }

    fn tuned(&self, op: &GemmOp) -> Option<Choice> {
        self.tuning.read().unwrap_or_else(|p| p.into_inner()).get(op)
    }

    /// The tuned choices ([`TuneTable::to_text`] saves them).
    pub fn tuning(&self) -> TuneTable {
        self.tuning.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Add the choices of a saved table ([`TuneTable::to_text`]); the table must have been
    /// measured on a device of the same name and SM count, and every line must parse and name a
    /// kernel of this build that computes its shape, or nothing is added ([`Error::Tuning`](crate::Error::Tuning)).
    /// Returns how many choices the text held.
    pub fn load_tuning(&self, text: &str) -> Result<usize> {
        let table = TuneTable::parse(text, self.family, &self.info.name, self.info.sms)?;
        let n = table.len();
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).merge(table)?;
        Ok(n)
    }

    /// Forget every tuned choice: `auto` runs what its price picks.
    pub fn clear_tuning(&self) {
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Run `choice` for every later call with `op`'s key (what [`Gemm::tune`] ends with).
    pub(crate) fn insert_tuned(&self, op: &GemmOp, choice: Choice) -> Result<()> {
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).insert(op, choice)
    }
}
