//! From candle's view of two operands (dimensions, strides in elements, start offset) to one
//! hgemm call: plain Rust, no device, so that every mapping is unit-tested without a GPU.
//!
//! A matrix whose rows or columns are contiguous is read in place, in that storage order with its
//! other stride as the leading dimension: `w.t()` and a narrowed view cost no copy. Batch
//! dimensions that collapse into one stride become a strided batch; a right operand broadcast
//! over the batch (rank 2, or stride 0) folds the batch into M where the left operand's batch
//! entries are evenly spaced rows, which is one larger GEMM instead of a batch.

use crate::error::MatmulError;
use hgemm::{GemmOp, Layout};

/// One operand as candle's `Layout` describes it.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// Dimensions, the matrix's rows and columns last.
    pub dims: &'a [usize],
    /// Strides in elements, one per dimension.
    pub strides: &'a [usize],
    /// Elements from the start of the storage to the first element.
    pub offset: usize,
}

/// The hgemm call for `lhs · rhs` and where its operands and output start.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulPlan {
    /// The call: A is the left operand, B the right one, C the dense row-major output.
    pub op: GemmOp,
    /// Elements of the left operand's storage before A's first element.
    pub lhs_offset: usize,
    /// Elements of the right operand's storage before B's first element.
    pub rhs_offset: usize,
    /// Dimensions of the output: the batch dimensions, then M and N.
    pub out_dims: Vec<usize>,
}

impl MatmulPlan {
    /// Elements of the output.
    pub fn out_len(&self) -> usize {
        self.out_dims.iter().product()
    }
}

/// A `rows × cols` matrix with strides `(s_rows, s_cols)` as hgemm reads it, with `preferred`
/// taken where both orders describe it (a single row or column): the K-major order, which every
/// kernel reads. A leading dimension not a multiple of 8 is kept; hgemm refuses it with its reason.
fn matrix(rows: usize, cols: usize, s_rows: usize, s_cols: usize, preferred: Layout) -> Option<(Layout, usize)> {
    // With one row the row stride is never followed: any leading dimension TMA accepts will do.
    let row_major = (s_cols == 1 || cols == 1).then(|| if rows == 1 { cols.next_multiple_of(8) } else { s_rows });
    let col_major = (s_rows == 1 || rows == 1).then(|| if cols == 1 { rows.next_multiple_of(8) } else { s_cols });
    let row_major = row_major.filter(|&ld| ld >= cols).map(|ld| (Layout::RowMajor, ld));
    let col_major = col_major.filter(|&ld| ld >= rows).map(|ld| (Layout::ColMajor, ld));
    let mut both = [row_major, col_major].into_iter().flatten().collect::<Vec<_>>();
    // Prefer a leading dimension TMA can stride, then the K-major order.
    both.sort_by_key(|&(layout, ld)| (!ld.is_multiple_of(8), layout != preferred));
    both.first().copied()
}

/// The one stride that walks every batch entry of an operand in order, if its batch dimensions
/// collapse into one (dimensions of size 1 are skipped; 0 means broadcast over the batch).
/// `None` for a batch of one or none.
fn batch_stride(dims: &[usize], strides: &[usize]) -> Result<Option<usize>, ()> {
    let mut walk = dims.iter().zip(strides).rev().filter(|&(&d, _)| d != 1);
    let Some((&d0, &s0)) = walk.next() else { return Ok(None) };
    let (mut d_in, mut s_in) = (d0, s0);
    for (&d, &s) in walk {
        if s_in.checked_mul(d_in) != Some(s) {
            return Err(());
        }
        (d_in, s_in) = (d, s);
    }
    Ok(Some(s0))
}

/// The hgemm call computing candle's `lhs.matmul(rhs)` for `lhs` `[.., M, K]` and `rhs` `[.., K, N]`
/// (batch dimensions equal, or absent from one side, which is then broadcast), into a new dense
/// row-major output of `out_dims`.
pub fn plan(lhs: View<'_>, rhs: View<'_>) -> Result<MatmulPlan, MatmulError> {
    let shapes = || (lhs.dims.to_vec(), rhs.dims.to_vec());
    let (lr, rr) = (lhs.dims.len(), rhs.dims.len());
    if lr < 2 || rr < 2 || lhs.strides.len() != lr || rhs.strides.len() != rr {
        return Err(MatmulError::Rank { lhs: lhs.dims.to_vec(), rhs: rhs.dims.to_vec() });
    }
    let (m, k) = (lhs.dims[lr - 2], lhs.dims[lr - 1]);
    let (k_rhs, n) = (rhs.dims[rr - 2], rhs.dims[rr - 1]);
    if k != k_rhs {
        let (lhs, rhs) = shapes();
        return Err(MatmulError::InnerDims { lhs, rhs });
    }
    let (lhs_batch, rhs_batch) = (&lhs.dims[..lr - 2], &rhs.dims[..rr - 2]);
    let batch_dims = match (lhs_batch, rhs_batch) {
        (l, r) if l == r => l,
        (l, []) => l,
        ([], r) => r,
        _ => {
            let (lhs, rhs) = shapes();
            return Err(MatmulError::BatchDims { lhs, rhs });
        }
    };
    let batch: usize = batch_dims.iter().product();
    let out_dims = [batch_dims, &[m, n]].concat();
    if m == 0 || n == 0 || batch == 0 || k == 0 {
        // Nothing to read (K = 0: C is zero): hgemm takes the dense call as it is.
        let op = GemmOp::new(m, n, k);
        let op = if batch > 1 { op.batched(batch, 0, 0, m * n) } else { op };
        return Ok(MatmulPlan { op, lhs_offset: lhs.offset, rhs_offset: rhs.offset, out_dims });
    }
    let strides_error = |operand: &'static str, v: &View<'_>| MatmulError::Strides {
        operand,
        dims: v.dims.to_vec(),
        strides: v.strides.to_vec(),
    };
    let (a_layout, lda) = matrix(m, k, lhs.strides[lr - 2], lhs.strides[lr - 1], Layout::RowMajor)
        .ok_or_else(|| strides_error("lhs", &lhs))?;
    let (b_layout, ldb) = matrix(k, n, rhs.strides[rr - 2], rhs.strides[rr - 1], Layout::ColMajor)
        .ok_or_else(|| strides_error("rhs", &rhs))?;
    for (operand, offset) in [("lhs", lhs.offset), ("rhs", rhs.offset)] {
        // Candle's allocations are aligned far beyond 16 bytes: the offset decides the address.
        if !offset.is_multiple_of(8) {
            return Err(MatmulError::Offset { operand, offset });
        }
    }
    let plan =
        |op: GemmOp| MatmulPlan { op, lhs_offset: lhs.offset, rhs_offset: rhs.offset, out_dims: out_dims.clone() };
    let c = |op: GemmOp| op.c(Layout::RowMajor, n);
    if batch == 1 {
        return Ok(plan(c(GemmOp::new(m, n, k).a(a_layout, lda).b(b_layout, ldb))));
    }
    // Absent batch dimensions broadcast, like a zero stride.
    let stride = |v: &View<'_>, dims: &[usize], operand| match dims {
        [] => Ok(0),
        _ => {
            batch_stride(dims, &v.strides[..dims.len()]).map(|s| s.unwrap_or(0)).map_err(|()| strides_error(operand, v))
        }
    };
    let (sa, sb) = (stride(&lhs, lhs_batch, "lhs")?, stride(&rhs, rhs_batch, "rhs")?);
    let broadcast = || MatmulError::Broadcast { lhs: lhs.dims.to_vec(), rhs: rhs.dims.to_vec() };
    match (sa, sb) {
        (0, 0) => Err(broadcast()),
        // B broadcast: the batch entries of a row-major A whose rows are evenly spaced across
        // entries (one row each, or M rows `lda` apart and `M·lda` between entries) are the rows
        // of one taller A, and C's entries those of one taller C.
        (sa, 0) if a_layout == Layout::RowMajor && m == 1 && sa >= k => {
            Ok(plan(c(GemmOp::new(batch, n, k).a(Layout::RowMajor, sa).b(b_layout, ldb))))
        }
        (sa, 0) if a_layout == Layout::RowMajor && Some(sa) == m.checked_mul(lda) => {
            Ok(plan(c(GemmOp::new(batch * m, n, k).a(Layout::RowMajor, lda).b(b_layout, ldb))))
        }
        // One operand broadcast and no folding: TMA maps take no zero batch stride.
        (0, _) | (_, 0) => Err(broadcast()),
        (sa, sb) => Ok(plan(c(GemmOp::new(m, n, k).a(a_layout, lda).b(b_layout, ldb)).batched(batch, sa, sb, m * n))),
    }
}

#[cfg(test)]
mod tests;
