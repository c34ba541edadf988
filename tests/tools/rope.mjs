// rope.mjs: RoPE's inv_freq as transformers' modeling_rope_utils.py
// computes it, for the JavaScript tools (refmodel.mjs, checkweights.mjs):
// theta^(-2i/dim), and with rope_scaling llama3 (Llama 3.1/3.2) the long
// wavelengths divided by factor, the short ones kept and the band between
// interpolated by smooth_factor.  Written from the transformers source,
// apart from the C code (lib/compiler/pack.c, tests/tools/refmodel.c).

// The rope_scaling of a config.json or model.json: null (none), or the
// llama3, longrope (config.json; its inv_freq is the caller's: it depends
// on the sequence) or freq_factors (model.json) object; anything else
// throws.
export function ropeScaling(rs) {
  const type = rs ? (rs.rope_type ?? rs.type) : "default";
  if (type === "default") return null;
  if (!["llama3", "longrope", "freq_factors", "linear"].includes(type))
    throw new Error(`rope_scaling '${type}' is not supported`);
  return rs;
}

export function invFreq(dim, base, scaling) {
  const half = dim / 2;
  const f = new Float64Array(half);
  for (let i = 0; i < half; i++) f[i] = 1 / base ** ((2 * i) / dim);
  if (!scaling) return f;
  if (scaling.rope_type === "freq_factors") {
    // model.json's: each inv_freq divided by its factor (ggml's freq_factors)
    for (let i = 0; i < half; i++) f[i] /= scaling.factors[i];
    return f;
  }
  if ((scaling.rope_type ?? scaling.type) === "linear") {
    // _compute_linear_scaling_rope_parameters: inv_freq /= factor
    for (let i = 0; i < half; i++) f[i] /= scaling.factor;
    return f;
  }
  const { factor, low_freq_factor: lo, high_freq_factor: hi } = scaling;
  const old = scaling.original_max_position_embeddings;
  for (let i = 0; i < half; i++) {
    const wavelen = (2 * Math.PI) / f[i];
    let g = wavelen > old / lo ? f[i] / factor : f[i];
    if (!(wavelen < old / hi) && !(wavelen > old / lo)) {
      const smooth = (old / wavelen - lo) / (hi - lo);
      g = ((1 - smooth) * g) / factor + smooth * g;
    }
    f[i] = g;
  }
  return f;
}
