// generic.mlir: bufferization only, for the generic pass list.  Empty
// tensors are eliminated first, so that results land in place (RoPE'd keys
// straight into the KV cache); the remaining copies become linalg.copy
// (then loops), never calls to the MLIR runtime's memrefCopy.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.bufferization.eliminate_empty_tensors %f : !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = true, function_boundary_type_conversion = 1 : i32, memcpy_op = "linalg.copy"} : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
