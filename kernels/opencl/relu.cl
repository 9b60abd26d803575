// relu: max(x, 0); a NaN stays NaN (as torch.relu), which fmax would not keep.
inline float dnnb_unary(float x) { return x < 0.0f ? 0.0f : x; }
