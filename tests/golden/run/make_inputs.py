# Writes the small .npy inputs of the `tilevm run` golden cases (run from this folder; needs no numpy):
#   x.npy      f16 [2, 4]: 0.5, 1, ..., 4
#   x_f32.npy  f32 [2, 4]: the same values (the wrong dtype for an f16* parameter)
#   x32x8.npy  f16 [32, 8]: 0, 0.25, ..., 63.75 (rows of 16 bytes, as TMA copies need)
#   x128.npy   f32 [128]: 0, 0.5, ..., 63.5
import struct

def write_npy(path, descr, shape, data):
    dims = ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    total = (10 + len(header) + 1 + 63) // 64 * 64
    header += " " * (total - 10 - len(header) - 1) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)

values = [0.5 * (k + 1) for k in range(8)]
write_npy("x.npy", "<f2", [2, 4], struct.pack("<8e", *values))
write_npy("x_f32.npy", "<f4", [2, 4], struct.pack("<8f", *values))
write_npy("x32x8.npy", "<f2", [32, 8], struct.pack("<256e", *[0.25 * k for k in range(256)]))
write_npy("x128.npy", "<f4", [128], struct.pack("<128f", *[0.5 * k for k in range(128)]))
# overflow.npy  f16 (2^32, 2^32, 2^32) and no data: the element count overflows int64 (must be refused, not
#               wrapped to 0 elements)
write_npy("overflow.npy", "<f2", [2**32, 2**32, 2**32], b"")
# The split-K ticket cases (examples/split_sum_ticket.tile: K = 64, N = 32, BN = 16, SPLIT = 4):
#   x64x32.npy  f32 [64, 32]: 0, 0.25, ..., 511.75      p4x32.npy   f32 [4, 32]: -1 (poison)
#   c2.npy      i32 [2]: 0, 0 (the counters)            c2_one.npy  i32 [2]: 1, 0 (a counter left mid-count)
#   y32.npy     f32 [32]: -1 (poison)
write_npy("x64x32.npy", "<f4", [64, 32], struct.pack("<2048f", *[0.25 * k for k in range(2048)]))
write_npy("p4x32.npy", "<f4", [4, 32], struct.pack("<128f", *([-1.0] * 128)))
write_npy("c2.npy", "<i4", [2], struct.pack("<2i", 0, 0))
write_npy("c2_one.npy", "<i4", [2], struct.pack("<2i", 1, 0))
write_npy("y32.npy", "<f4", [32], struct.pack("<32f", *([-1.0] * 32)))
#   y4_i32.npy  i32 [4]: -1 (poison; run/ticket_order_dependent)
write_npy("y4_i32.npy", "<i4", [4], struct.pack("<4i", -1, -1, -1, -1))
