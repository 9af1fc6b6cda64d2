#include "calibrate/traces/gemm_pricing.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "calibrate/traces/profile_fit.hpp"
#include "cost_model/bounded_message.hpp"

namespace overlap::traces {

GemmMath gemm_math(const std::string& kernel, DType dtype) {
  if (dtype != DType::fp32) return GemmMath::as_dtype;
  std::string n = kernel;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n.find("tf32") != std::string::npos || n.find("s1688gemm") != std::string::npos) return GemmMath::tf32;
  return GemmMath::as_dtype;  // `sgemm`, or a name that says nothing: PyTorch's default, fp32
}

GemmPrice price_gemm(const HardwareProfile& hw, const GemmShape& shape, const std::string& kernel) {
  GemmPrice p;
  const auto dtype = model_dtype(shape.dtype);
  if (!dtype) {
    p.why = "dtype '" + shape.dtype + "' not modelled";
    return p;
  }
  p.math = gemm_math(kernel, *dtype);
  GemmLaunchOptions o;
  o.batch = shape.batch;
  o.split_k = true;
  o.tf32 = p.math == GemmMath::tf32;
  try {
    p.launch = plan_gemm_launch(hw, overlap::GemmShape{shape.m, shape.n, shape.k, *dtype}, o);
    p.ns = static_cast<double>(p.launch.time_ps) / 1000.0;
  } catch (const RangeError& e) {
    // A shape whose bytes, tiles or time leave 64 bits (2^40 on a side): said per kernel, never a wrapped 0.
    p.why = bounded_message(std::string("beyond what the model counts: ") + e.what());
  } catch (const std::invalid_argument&) {
    p.why = o.tf32 ? "no TF32 rate in the profile (peak_tflops bf16 or fp16)"
                   : std::string("dtype ") + dtype_name(*dtype) + " not in the profile";  // no peak_tflops for it
  }
  return p;
}

}  // namespace overlap::traces
