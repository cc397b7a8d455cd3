"""The reader of what a TPU-compiled program moves through HBM, tile by tile (namedaxes.traffic)."""

from namedaxes.traffic import hbm_traffic, passes, tiled_bytes


def test_an_array_is_padded_to_whole_tiles_over_its_two_minor_dimensions():
    # (4096, 32) with the 32 minor: each row of 32 floats takes a tile's 128 lanes
    assert tiled_bytes("f32[4096,32]{1,0:T(8,128)}") == [(4096 * 128 * 4, 4096 * 32 * 4, True)]
    # the same array with the 4096 minor: 32 rows fill four tiles of 8 exactly, nothing padded
    assert tiled_bytes("f32[4096,32]{0,1:T(8,128)}") == [(4096 * 32 * 4, 4096 * 32 * 4, True)]
    # a head's width of 8 under a sequence of 32, both minor: 8 x 32 is one tile of 8 x 128
    assert tiled_bytes("bf16[64,32,4,8]{1,3,2,0:T(8,128)(2,1)}")[0][0] == 64 * 4 * 8 * 128 * 2
    # an array the compiler placed on chip (S(1)) is not in HBM; one with no layout counts its own bytes
    assert tiled_bytes("f32[8,100]{1,0:T(8,128)S(1)}") == [(8 * 128 * 4, 8 * 100 * 4, False)]
    assert tiled_bytes("f32[3,5]") == [(60, 60, True)]


def test_the_entry_computations_passes_on_a_hand_written_program():
    text = """HloModule m, is_scheduled=true
%fused_dot (p: f32[256,32]) -> f32[256,128] {
  %p = f32[256,32]{1,0} parameter(0)
  %w = f32[32,128]{1,0} constant({...})
  ROOT %d = f32[256,128]{1,0} dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY %main (a: f32[256,32], b: f32[1024,32]) -> f32[256,128] {
  %a = f32[256,32]{1,0:T(8,128)} parameter(0)
  %b = f32[1024,32]{1,0:T(8,128)} parameter(1)
  %s = ((f32[1024,32]{1,0:T(8,128)}), f32[256,32]{1,0:T(8,128)S(1)}, s32[]{:S(2)}) slice-start(%b)
  %e = f32[256,32]{1,0:T(8,128)S(1)} slice-done(%s)
  %f = f32[256,128]{1,0:T(8,128)} fusion(%a), kind=kOutput, calls=%fused_dot
  ROOT %g = f32[256,128]{1,0:T(8,128)} add(%f, %e)
}
"""
    tile = 256 * 128 * 4  # a (256, 32) or (256, 128) array, tiled: 128 lanes a row
    found = passes(text)
    assert [(p.name, p.flops, p.tiled) for p in found] == [
        ("s", 0.0, tile),  # the slice reads its quarter of b from HBM, into the chip's memory
        ("f", 2.0 * 256 * 32 * 128, 2 * tile),  # the matmul reads a and writes its result
        ("g", 0.0, 2 * tile),  # the add reads f and writes g; e is on chip
    ]
    # the matrix unit runs the contraction over 32 as a whole pass of 128: four times the FLOPs counted
    assert [p.mxu_flops for p in found] == [0.0, 4 * 2.0 * 256 * 32 * 128, 0.0]
    traffic = hbm_traffic(text)
    assert traffic.tiled == 5 * tile and traffic.logical == 256 * 32 * 4 * 2 + 256 * 128 * 4 * 3
