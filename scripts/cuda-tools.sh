# Sourced by scripts/test.sh and scripts/build-ptx.sh: NVIDIA's ptxas, cuobjdump and nvdisasm from
# PyPI, installed into .tools/ once (no CUDA toolkit needed), and HGEMM_CUDA_BIN pointing at them.
# The ptxas version is the one the committed cubins were assembled with (host/ptx/cubins.txt).
CUDA_TOOLS=.tools/cuda
CUDA_TOOLS_VERSION=13.5.37
if [ ! -x "$CUDA_TOOLS/nvidia/cu13/bin/ptxas" ] || [ ! -x "$CUDA_TOOLS/nvidia/cu13/bin/cuobjdump" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --target "$CUDA_TOOLS" \
        "nvidia-cuda-nvcc==$CUDA_TOOLS_VERSION" "nvidia-cuda-cuobjdump==$CUDA_TOOLS_VERSION" \
        "nvidia-cuda-nvdisasm==$CUDA_TOOLS_VERSION"
fi
export HGEMM_CUDA_BIN="$PWD/$CUDA_TOOLS/nvidia/cu13/bin"
