//! TMA tensor maps (`cuTensorMapEncodeTiled`). The parameters are computed and checked by plain
//! Rust first ([`TensorMapParams`]), so every rule TMA imposes becomes a typed error before the
//! driver is called, and the host tests can check the parameters without a GPU.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use hgemm_kernels::spec::{L2Promotion, Swizzle, TmaBox};

/// One `cuTensorMapEncodeTiled` call for a bf16 matrix (or strided batch of matrices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapParams {
    /// The operand the map describes ("A", "B" or "C"), for errors.
    pub operand: &'static str,
    /// Device address of the first element.
    pub address: u64,
    /// 2 for one matrix, 3 for a strided batch.
    pub rank: u32,
    /// Extent of each dimension in elements, contiguous dimension first.
    pub dims: [u64; 3],
    /// Byte stride of dimensions 1 and 2 (dimension 0 is contiguous).
    pub strides: [u64; 2],
    /// Elements per dimension of one TMA box.
    pub box_dims: [u32; 3],
    /// Shared-memory swizzle of a box.
    pub swizzle: Swizzle,
    /// L2 sector promotion of the loads.
    pub l2_promotion: L2Promotion,
}

impl TensorMapParams {
    /// A `rows × cols` matrix whose rows are `ld` elements apart (`cols` contiguous), `batch` of
    /// them `batch_stride` elements apart, read or written in `tile` boxes.
    #[allow(clippy::too_many_arguments)]
    pub fn matrix(
        operand: &'static str,
        address: u64,
        rows: u64,
        cols: u64,
        ld: u64,
        batch: u64,
        batch_stride: u64,
        tile: TmaBox,
    ) -> Result<TensorMapParams> {
        if !address.is_multiple_of(16) {
            return Err(Error::Misaligned { operand, address, align: 16 });
        }
        if ld < cols {
            return Err(Error::LeadingDimension { operand, ld: ld as usize, min: cols as usize });
        }
        // In elements, before anything doubles them into bytes (which could wrap).
        if ld >= 1 << 39 || batch_stride >= 1 << 39 {
            return Err(Error::InvalidShape(format!("{operand} has a stride of 2^40 bytes or more, beyond TMA")));
        }
        if !(ld * 2).is_multiple_of(16) {
            return Err(Error::InvalidShape(format!(
                "the rows of {operand} are {ld} elements apart; TMA needs a multiple of 8 (16 bytes)"
            )));
        }
        if batch > 1 && !(batch_stride * 2).is_multiple_of(16) {
            return Err(Error::InvalidShape(format!(
                "the batch stride of {operand} is {batch_stride} elements; TMA needs a multiple of 8 (16 bytes)"
            )));
        }
        // Dimensions up to 2^32 may be encoded, but the kernels' TMA coordinates are 32-bit signed.
        // TMA describes no empty dimension (every extent is at least 1).
        if rows == 0 || cols == 0 || batch == 0 {
            return Err(Error::InvalidShape(format!(
                "{operand} is empty ({rows} by {cols}, batch of {batch}): TMA needs every dimension at least 1"
            )));
        }
        if rows > i32::MAX as u64 || cols > i32::MAX as u64 || batch > i32::MAX as u64 {
            return Err(Error::InvalidShape(format!(
                "{operand} has a dimension of 2^31 or more, beyond TMA's coordinates"
            )));
        }
        // What cuTensorMapEncodeTiled requires of a box (CUDA driver API, "Tensor Map Object
        // Management"): 1 to 256 elements per dimension, rows a multiple of 16 bytes, and with
        // the 128-byte swizzle rows of at most 128 bytes.
        let box_fits = (1..=256).contains(&tile.inner) && (1..=256).contains(&tile.outer);
        if !box_fits || !(tile.inner * 2).is_multiple_of(16) || (tile.swizzle == Swizzle::B128 && tile.inner * 2 > 128)
        {
            return Err(Error::InvalidShape(format!(
                "the TMA box for {operand}, {} by {} elements with {:?} swizzle, is not one TMA can load",
                tile.inner, tile.outer, tile.swizzle
            )));
        }
        Ok(TensorMapParams {
            operand,
            address,
            rank: if batch > 1 { 3 } else { 2 },
            dims: [cols, rows, batch.max(1)],
            strides: [ld * 2, batch_stride * 2],
            box_dims: [tile.inner, tile.outer, 1],
            swizzle: tile.swizzle,
            l2_promotion: tile.l2_promotion,
        })
    }

    /// The same map as rank 3 (a batch of one, if it was rank 2), for kernels whose TMA
    /// instructions always name a batch coordinate. The batch stride is then the whole matrix,
    /// which TMA, too, must be able to stride: a matrix of 2^40 bytes or more is an error.
    pub fn with_rank3(self) -> Result<TensorMapParams> {
        if self.rank == 3 {
            return Ok(self);
        }
        let whole = self.strides[0].checked_mul(self.dims[1]).filter(|&s| s < 1 << 40).ok_or_else(|| {
            Error::InvalidShape(format!(
                "{}, {} rows {} bytes apart, spans 2^40 bytes or more, beyond TMA's batch stride",
                self.operand, self.dims[1], self.strides[0]
            ))
        })?;
        Ok(TensorMapParams {
            rank: 3,
            dims: [self.dims[0], self.dims[1], 1],
            strides: [self.strides[0], whole],
            ..self
        })
    }

    /// Encode with the driver.
    pub fn encode(&self) -> Result<sys::CUtensorMap> {
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let element_strides = [1u32; 3];
        let swizzle = match self.swizzle {
            Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        // SAFETY: every array holds at least `rank` entries; the driver only reads them.
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                self.rank,
                self.address as *mut std::ffi::c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                match self.l2_promotion {
                    L2Promotion::None => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                    L2Promotion::B128 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                    L2Promotion::B256 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                },
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        match r {
            sys::CUresult::CUDA_SUCCESS => Ok(map),
            e => Err(Error::Driver { call: "cuTensorMapEncodeTiled", code: format!("{e:?} for {self:?}") }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_BOX: TmaBox = TmaBox::new(64, 128, Swizzle::B128);

    #[test]
    fn strides_beyond_tma_are_refused_not_wrapped() {
        // 2 · (2^63 + 8) bytes wraps to 16: it must read as the stride it is, not as 16 bytes.
        let huge = (1u64 << 63) + 8;
        for (ld, stride) in [(huge, 0), (4096, huge), (1 << 39, 0)] {
            let r = TensorMapParams::matrix("A", 0x1000, 8, 64, ld, 2, stride, A_BOX);
            assert!(matches!(&r, Err(Error::InvalidShape(s)) if s.contains("2^40")), "ld {ld}, stride {stride}: {r:?}");
        }
        assert!(TensorMapParams::matrix("A", 0x1000, 8, 64, (1 << 39) - 8, 1, 0, A_BOX).is_ok());
    }

    #[test]
    fn row_major_matrix() {
        let p = TensorMapParams::matrix("A", 0x1000, 8192, 4096, 4096, 1, 0, A_BOX).unwrap();
        assert_eq!(p.rank, 2);
        assert_eq!(p.dims, [4096, 8192, 1]);
        assert_eq!(p.strides[0], 8192);
        assert_eq!(p.box_dims, [64, 128, 1]);
    }

    #[test]
    fn sub_matrix_and_batch() {
        let p = TensorMapParams::matrix("B", 0x1000, 100, 72, 136, 4, 136 * 100 + 8, A_BOX).unwrap();
        assert_eq!(p.rank, 3);
        assert_eq!(p.dims, [72, 100, 4]);
        assert_eq!(p.strides, [272, 2 * (136 * 100 + 8)]);
    }

    #[test]
    fn rank3_of_a_single_matrix_is_a_batch_of_one() {
        let p = TensorMapParams::matrix("A", 0x1000, 100, 64, 72, 1, 0, A_BOX).unwrap().with_rank3().unwrap();
        assert_eq!((p.rank, p.dims, p.strides), (3, [64, 100, 1], [144, 144 * 100]));
        // A matrix whose whole span TMA cannot stride: an error, not a wrapped or oversized stride.
        for (rows, ld) in [(1 << 30, 1 << 38), (1 << 20, 1 << 20)] {
            let r = TensorMapParams::matrix("A", 0x1000, rows, 64, ld, 1, 0, A_BOX).unwrap().with_rank3();
            assert!(
                matches!(&r, Err(Error::InvalidShape(s)) if s.starts_with("A, ") && s.contains("2^40")),
                "{rows} rows {ld} apart: {r:?}"
            );
        }
        assert!(
            TensorMapParams::matrix("A", 0x1000, (1 << 19) - 1, 64, 1 << 20, 1, 0, A_BOX).unwrap().with_rank3().is_ok()
        );
    }

    #[test]
    fn every_kernel_box_is_a_valid_tma_box() {
        for spec in hgemm_kernels::kernels() {
            for (operand, b) in [("A", Some(spec.a_box)), ("B", Some(spec.b_box)), ("C", spec.c_box)] {
                let Some(b) = b else { continue };
                let p = TensorMapParams::matrix(operand, 0x1000, 8192, 8192, 8192, 1, 0, b)
                    .unwrap_or_else(|e| panic!("{} {operand}: {b:?}: {e}", spec.name));
                assert_eq!((p.box_dims, p.swizzle, p.l2_promotion), ([b.inner, b.outer, 1], b.swizzle, b.l2_promotion));
            }
        }
    }

    #[test]
    fn rejects_what_tma_cannot_describe() {
        assert!(matches!(
            TensorMapParams::matrix("A", 0x1008, 64, 64, 64, 1, 0, A_BOX),
            Err(Error::Misaligned { operand: "A", address: 0x1008, align: 16 })
        ));
        assert!(matches!(TensorMapParams::matrix("A", 0x1000, 64, 100, 100, 1, 0, A_BOX), Err(Error::InvalidShape(_))));
        assert!(matches!(
            TensorMapParams::matrix("C", 0x1000, 64, 64, 32, 1, 0, A_BOX),
            Err(Error::LeadingDimension { operand: "C", ld: 32, min: 64 })
        ));
        assert!(matches!(
            TensorMapParams::matrix("A", 0x1000, 64, 64, 64, 2, 4100, A_BOX),
            Err(Error::InvalidShape(_))
        ));
        assert!(matches!(
            TensorMapParams::matrix("A", 0x1000, 1 << 33, 64, 64, 1, 0, A_BOX),
            Err(Error::InvalidShape(_))
        ));
        for (rows, cols, batch) in [(0, 64, 1), (64, 0, 1), (64, 64, 0)] {
            let r = TensorMapParams::matrix("A", 0x1000, rows, cols, 64, batch, 4096, A_BOX);
            assert!(matches!(&r, Err(Error::InvalidShape(s)) if s.contains("empty")), "{rows}x{cols}x{batch}: {r:?}");
        }
        // Boxes TMA cannot load: empty, past 256 elements, rows not a multiple of 16 bytes, or
        // rows past 128 bytes under the 128-byte swizzle.
        for (inner, outer, swizzle) in [
            (0, 64, Swizzle::B128),
            (64, 0, Swizzle::B128),
            (64, 257, Swizzle::B128),
            (60, 64, Swizzle::None),
            (128, 64, Swizzle::B128),
        ] {
            let tile = TmaBox { inner, outer, swizzle, ..A_BOX };
            let r = TensorMapParams::matrix("B", 0x1000, 1024, 1024, 1024, 1, 0, tile);
            assert!(matches!(&r, Err(Error::InvalidShape(s)) if s.contains("TMA box for B")), "{tile:?}: {r:?}");
        }
        let wide = TmaBox { inner: 128, outer: 256, swizzle: Swizzle::None, ..A_BOX };
        assert!(TensorMapParams::matrix("B", 0x1000, 1024, 1024, 1024, 1, 0, wide).is_ok());
    }
}
