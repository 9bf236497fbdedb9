"""An independent safetensors reader, written from the format's spec with
numpy only (Debian has no python3-safetensors). Prints one JSON line per
tensor: name, dtype, shape, sum and first value, and the metadata."""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}

with open(sys.argv[1], "rb") as f:
    raw = f.read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8 : 8 + n])
data = memoryview(raw)[8 + n :]
meta = header.pop("__metadata__", {})
out = {"metadata": meta, "tensors": {}}
for name, info in header.items():
    lo, hi = info["data_offsets"]
    arr = np.frombuffer(data[lo:hi], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")).reshape(info["shape"])
    out["tensors"][name] = {
        "dtype": info["dtype"],
        "shape": list(arr.shape),
        "sum": float(arr.astype(np.float64).sum()),
        "first": float(arr.flat[0]),
    }
print(json.dumps(out))
