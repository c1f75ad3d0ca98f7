use super::*;

/// Strides of a dense row-major tensor of `dims`.
fn dense(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    strides
}

/// An owned view, transformed as candle's `t()`, `transpose`, `narrow` and `broadcast_as` do.
#[derive(Clone, Debug)]
struct V {
    dims: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl V {
    fn new(dims: &[usize]) -> V {
        V { dims: dims.to_vec(), strides: dense(dims), offset: 0 }
    }
    fn transpose(mut self, a: usize, b: usize) -> V {
        self.dims.swap(a, b);
        self.strides.swap(a, b);
        self
    }
    fn t(self) -> V {
        let r = self.dims.len();
        self.transpose(r - 2, r - 1)
    }
    fn narrow(mut self, dim: usize, start: usize, len: usize) -> V {
        self.offset += start * self.strides[dim];
        self.dims[dim] = len;
        self
    }
    /// Prepends batch dimensions of stride 0.
    fn broadcast_left(mut self, batch: &[usize]) -> V {
        self.dims.splice(0..0, batch.iter().copied());
        self.strides.splice(0..0, batch.iter().map(|_| 0));
        self
    }
    fn view(&self) -> View<'_> {
        View { dims: &self.dims, strides: &self.strides, offset: self.offset }
    }
    /// Elements the storage under the view holds (the view is cut from a dense tensor of that
    /// size): one past the furthest element.
    fn storage_len(&self) -> usize {
        self.offset + self.dims.iter().zip(&self.strides).map(|(&d, &s)| (d - 1) * s).sum::<usize>() + 1
    }
    /// Candle's address of the element at `index`.
    fn address(&self, index: &[usize]) -> usize {
        self.offset + index.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<usize>()
    }
}

/// hgemm's address of element (row, col) of batch entry `e` of a matrix of `layout` and `ld`.
fn hgemm_address(layout: Layout, ld: usize, stride: usize, e: usize, row: usize, col: usize) -> usize {
    e * stride
        + match layout {
            Layout::RowMajor => row * ld + col,
            Layout::ColMajor => col * ld + row,
        }
}

/// Every element of both operands and the output lies where candle has it, as hgemm reads the
/// plan (a folded batch as rows of one taller A and C), and hgemm's own checks pass on buffers of
/// the storage's length.
fn check(lhs: &V, rhs: &V) -> MatmulPlan {
    let p = plan(lhs.view(), rhs.view()).unwrap_or_else(|e| panic!("{lhs:?} · {rhs:?}: {e}"));
    let (lr, rr) = (lhs.dims.len(), rhs.dims.len());
    let (m, k, n) = (lhs.dims[lr - 2], lhs.dims[lr - 1], rhs.dims[rr - 1]);
    let out_batch = &p.out_dims[..p.out_dims.len() - 2];
    assert_eq!(p.out_dims[p.out_dims.len() - 2..], [m, n]);
    let batch: usize = out_batch.iter().product();
    let folded = p.op.batch == 1 && batch > 1;
    assert_eq!((p.op.m, p.op.n, p.op.k), (if folded { batch * m } else { m }, n, k), "{p:?}");
    assert!(folded || p.op.batch == batch.max(1), "{p:?}");
    let op = &p.op;
    let valid = op.validate(lhs.storage_len() - p.lhs_offset, rhs.storage_len() - p.rhs_offset, p.out_len());
    assert_eq!(valid, Ok(true), "{p:?}");
    assert_eq!(op.c_layout, Layout::RowMajor);
    for e in 0..batch {
        // The batch index of entry e, then each operand's own (absent dimensions broadcast).
        let mut idx = vec![0; out_batch.len()];
        let mut r = e;
        for (i, &d) in out_batch.iter().enumerate().rev() {
            idx[i] = r % d;
            r /= d;
        }
        let own = |v: &V| idx[idx.len() - (v.dims.len() - 2)..].to_vec();
        let (entry, row0) = if folded { (0, e * m) } else { (e, 0) };
        for i in 0..m {
            for kk in 0..k {
                let want = lhs.address(&[own(lhs), vec![i, kk]].concat());
                let got = p.lhs_offset + hgemm_address(op.a_layout, op.lda, op.stride_a, entry, row0 + i, kk);
                assert_eq!(got, want, "A of entry {e} at ({i}, {kk}): {p:?}");
            }
        }
        for kk in 0..k {
            for j in 0..n {
                let want = rhs.address(&[own(rhs), vec![kk, j]].concat());
                let got = p.rhs_offset + hgemm_address(op.b_layout, op.ldb, op.stride_b, entry, kk, j);
                assert_eq!(got, want, "B of entry {e} at ({kk}, {j}): {p:?}");
            }
        }
        for i in 0..m {
            for j in 0..n {
                let got = hgemm_address(op.c_layout, op.ldc, op.stride_c, entry, row0 + i, j);
                assert_eq!(got, (e * m + i) * n + j, "C of entry {e} at ({i}, {j}): {p:?}");
            }
        }
    }
    p
}

fn err(lhs: &V, rhs: &V) -> MatmulError {
    plan(lhs.view(), rhs.view()).expect_err("the plan should be refused")
}

#[test]
fn dense_operands_are_row_major() {
    let p = check(&V::new(&[24, 16]), &V::new(&[16, 40]));
    assert_eq!(
        (p.op.a_layout, p.op.lda, p.op.b_layout, p.op.ldb, p.op.ldc),
        (Layout::RowMajor, 16, Layout::RowMajor, 40, 40)
    );
    assert_eq!(p.out_dims, [24, 40]);
}

#[test]
fn a_transposed_weight_is_the_native_call() {
    // x · wᵀ with w [out, in]: B is read column-major in place, the kernels' native C = A·Bᵀ.
    let p = check(&V::new(&[24, 16]), &V::new(&[40, 16]).t());
    assert!(p.op.is_native(), "{p:?}");
    assert_eq!(p.op, GemmOp::new(24, 40, 16));
}

#[test]
fn a_transposed_lhs_is_column_major() {
    let p = check(&V::new(&[16, 24]).t(), &V::new(&[16, 40]));
    assert_eq!((p.op.a_layout, p.op.lda), (Layout::ColMajor, 24));
}

#[test]
fn narrowed_views_keep_their_leading_dimension_and_offset() {
    // Columns 16..32 of a [24, 48] tensor, and rows 8..24 of a [32, 40] one.
    let lhs = V::new(&[24, 48]).narrow(1, 16, 16);
    let rhs = V::new(&[32, 40]).narrow(0, 8, 16);
    let p = check(&lhs, &rhs);
    assert_eq!((p.op.lda, p.lhs_offset, p.op.ldb, p.rhs_offset), (48, 16, 40, 320));
    // The same transposed.
    check(&V::new(&[48, 24]).narrow(0, 16, 16).t(), &V::new(&[40, 32]).narrow(1, 8, 16).t());
}

#[test]
fn equal_batches_are_a_strided_batch() {
    let p = check(&V::new(&[3, 24, 16]), &V::new(&[3, 16, 40]));
    assert_eq!((p.op.batch, p.op.stride_a, p.op.stride_b, p.op.stride_c), (3, 24 * 16, 16 * 40, 24 * 40));
    assert_eq!(p.out_dims, [3, 24, 40]);
    // Transposed inside each entry, and the batch taken from a wider tensor.
    check(&V::new(&[3, 16, 24]).transpose(1, 2), &V::new(&[3, 40, 16]).t());
    check(&V::new(&[5, 24, 16]).narrow(0, 1, 3), &V::new(&[3, 16, 40]));
}

#[test]
fn several_batch_dimensions_collapse_into_one_stride() {
    let p = check(&V::new(&[2, 3, 8, 16]), &V::new(&[2, 3, 16, 8]).t().t());
    assert_eq!((p.op.batch, p.out_dims.clone()), (6, vec![2, 3, 8, 8]));
    // A batch dimension of one does not break the walk.
    check(&V::new(&[2, 1, 3, 8, 16]), &V::new(&[2, 1, 3, 16, 8]));
    // Swapped batch dimensions: no single stride walks them.
    let lhs = V::new(&[3, 2, 8, 16]).transpose(0, 1);
    assert!(matches!(err(&lhs, &V::new(&[2, 3, 16, 8])), MatmulError::Strides { operand: "lhs", .. }));
}

#[test]
fn a_shared_weight_folds_the_batch_into_m() {
    // x [2, 3, 24, 16] · wᵀ for w [40, 16]: one GEMM of 144 rows.
    let x = V::new(&[2, 3, 24, 16]);
    let p = check(&x, &V::new(&[40, 16]).t());
    assert_eq!((p.op.m, p.op.batch, p.out_dims.clone()), (144, 1, vec![2, 3, 24, 40]));
    // The same weight broadcast explicitly (stride 0), as candle_nn's Linear does.
    let p2 = check(&x, &V::new(&[40, 16]).t().broadcast_left(&[2, 3]));
    assert_eq!(p2.op, p.op);
    // One row per entry (decoding): the rows are the entries, however far apart.
    let rows = V::new(&[4, 1, 64]).narrow(2, 8, 16);
    let p = check(&rows, &V::new(&[16, 40]));
    assert_eq!((p.op.m, p.op.lda), (4, 64));
}

#[test]
fn a_shared_weight_without_evenly_spaced_rows_is_refused() {
    // Each entry transposed: the entries' rows are not rows of one matrix.
    let lhs = V::new(&[3, 16, 24]).transpose(1, 2);
    assert!(matches!(err(&lhs, &V::new(&[16, 40])), MatmulError::Broadcast { .. }));
    // A shared left operand.
    assert!(matches!(err(&V::new(&[24, 16]), &V::new(&[3, 16, 40])), MatmulError::Broadcast { .. }));
}

#[test]
fn vectors_take_a_leading_dimension_tma_accepts() {
    // One row and one column, with strides along their dimension of one that are never followed
    // (candle keeps whatever a view left there).
    let row = V { dims: vec![1, 16], strides: vec![5, 1], offset: 0 };
    let column = V { dims: vec![16, 1], strides: vec![1, 3], offset: 0 };
    let p = check(&row, &column);
    assert_eq!((p.op.a_layout, p.op.lda, p.op.b_layout, p.op.ldb), (Layout::RowMajor, 16, Layout::ColMajor, 16));
    // Transposed vectors: strides of 1 both ways, so both orders describe them.
    let p = check(&V::new(&[16, 1]).t(), &V::new(&[1, 16]).t());
    assert_eq!((p.op.a_layout, p.op.lda, p.op.b_layout, p.op.ldb), (Layout::RowMajor, 16, Layout::ColMajor, 16));
}

#[test]
fn matrices_with_no_contiguous_dimension_are_refused() {
    // Every other column.
    let lhs = V { dims: vec![8, 16], strides: vec![32, 2], offset: 0 };
    let e = err(&lhs, &V::new(&[16, 8]));
    assert!(matches!(e, MatmulError::Strides { operand: "lhs", .. }), "{e}");
    assert!(e.to_string().contains("contiguous()"), "{e}");
    // A row broadcast down the matrix.
    let rhs = V { dims: vec![16, 8], strides: vec![0, 1], offset: 0 };
    assert!(matches!(err(&V::new(&[8, 16]), &rhs), MatmulError::Strides { operand: "rhs", .. }));
}

#[test]
fn misaligned_offsets_are_refused() {
    let lhs = V::new(&[8, 20]).narrow(1, 4, 16);
    assert_eq!(err(&lhs, &V::new(&[16, 8])), MatmulError::Offset { operand: "lhs", offset: 4 });
}

#[test]
fn shapes_candle_would_refuse_are_refused() {
    assert!(matches!(err(&V::new(&[16]), &V::new(&[16, 8])), MatmulError::Rank { .. }));
    assert!(matches!(err(&V::new(&[8, 16]), &V::new(&[24, 8])), MatmulError::InnerDims { .. }));
    assert!(matches!(err(&V::new(&[2, 8, 16]), &V::new(&[3, 16, 8])), MatmulError::BatchDims { .. }));
}

#[test]
fn empty_outputs_plan_nothing_to_compute() {
    for (lhs, rhs) in [([0, 16], [16, 8]), ([8, 16], [16, 0])] {
        let p = plan(V::new(&lhs).view(), V::new(&rhs).view()).unwrap();
        assert_eq!(p.out_len(), 0);
        assert_eq!(p.op.validate_shape(), Ok(false));
    }
    // K = 0: a zero output of the full size, which hgemm writes.
    let p = plan(V::new(&[8, 0]).view(), V::new(&[0, 16]).view()).unwrap();
    assert_eq!((p.out_dims.clone(), p.op.validate_shape()), (vec![8, 16], Ok(true)));
}

#[test]
fn hgemm_refuses_what_tma_cannot_read() {
    // K = 20 is planned as it is: hgemm's own check says why it cannot run.
    let p = check_unvalidated(&V::new(&[8, 20]), &V::new(&[20, 8]));
    let e = p.op.validate_shape().unwrap_err();
    assert!(e.to_string().contains("multiple of 8"), "{e}");
}

fn check_unvalidated(lhs: &V, rhs: &V) -> MatmulPlan {
    plan(lhs.view(), rhs.view()).unwrap()
}
