#include "ops/conv/pool2d_onednn.h"

#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/onednn.h"

namespace ofl {

namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

struct CachedPool {
  dnnl::memory::desc src, dst;
  dnnl::pooling_forward::primitive_desc forward_pd;
  dnnl::pooling_forward forward;
  dnnl::pooling_backward::primitive_desc backward_pd;
  dnnl::pooling_backward backward;
};

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t>;

std::shared_ptr<const CachedPool> Create(PoolKind kind, const Pool2dGeometry& g, int64_t n) {
  auto c = std::make_shared<CachedPool>();
  const int64_t channels = g.planes / n;
  c->src =
      dnnl::memory::desc({n, channels, g.height, g.width}, dnnl::memory::data_type::f32, tag::nchw);
  c->dst =
      dnnl::memory::desc({n, channels, g.out_h, g.out_w}, dnnl::memory::data_type::f32, tag::nchw);
  // The right padding that makes oneDNN's output size equal the floored one
  // (it may be negative: the last rows that no window reaches are skipped).
  dims pad_l = {g.pad_h, g.pad_w};
  dims pad_r = {(g.out_h - 1) * g.stride_h + g.kernel_h - g.height - g.pad_h,
                (g.out_w - 1) * g.stride_w + g.kernel_w - g.width - g.pad_w};
  const auto algorithm = kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                                : dnnl::algorithm::pooling_avg_include_padding;
  dims strides = {g.stride_h, g.stride_w}, kernel = {g.kernel_h, g.kernel_w};
  dnnl::pooling_forward::desc fwd(dnnl::prop_kind::forward_training, algorithm, c->src, c->dst,
                                  strides, kernel, pad_l, pad_r);
  c->forward_pd =
      dnnl::pooling_forward::primitive_desc(fwd, onednn::UserScratchpad(), onednn::Engine());
  c->forward = dnnl::pooling_forward(c->forward_pd);
  dnnl::pooling_backward::desc bwd(algorithm, c->src, c->dst, strides, kernel, pad_l, pad_r);
  c->backward_pd = dnnl::pooling_backward::primitive_desc(bwd, onednn::UserScratchpad(),
                                                          onednn::Engine(), c->forward_pd);
  c->backward = dnnl::pooling_backward(c->backward_pd);
  return c;
}

std::shared_ptr<const CachedPool> Get(PoolKind kind, const Pool2dGeometry& g, int64_t n) {
  static onednn::PrimitiveCache<Key, CachedPool> cache;
  Key key{static_cast<int>(kind),
          n,
          g.planes,
          g.height,
          g.width,
          g.kernel_h,
          g.kernel_w,
          g.stride_h,
          g.stride_w,
          g.pad_h,
          g.pad_w,
          g.out_h};
  return cache.Get(key, [&] { return Create(kind, g, n); });
}

dnnl::memory Wrap(const dnnl::memory::desc& md, const void* p) {
  return dnnl::memory(md, onednn::Engine(), const_cast<void*>(p));
}

// Runs the forward; returns the workspace (max pooling) in `workspace`.
void Forward(const CachedPool& c, const float* x, float* y, std::vector<char>* workspace) {
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, Wrap(c.src, x)},
                                                {DNNL_ARG_DST, Wrap(c.dst, y)}};
  const auto ws_md = c.forward_pd.workspace_desc();
  if (ws_md.get_size() > 0) {
    workspace->resize(ws_md.get_size());
    args.emplace(DNNL_ARG_WORKSPACE, Wrap(ws_md, workspace->data()));
  }
  const auto sp_md = c.forward_pd.scratchpad_desc();
  if (sp_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(sp_md, onednn::Scratchpad(sp_md.get_size())));
  }
  c.forward.execute(onednn::ThreadStream(), args);
  onednn::ThreadStream().wait();
}

}  // namespace

void OneDnnPoolForward(PoolKind kind, const Pool2dGeometry& g, int64_t batch, const float* x,
                       float* y) {
  std::vector<char> workspace;
  Forward(*Get(kind, g, batch), x, y, &workspace);
}

void OneDnnPoolBackward(PoolKind kind, const Pool2dGeometry& g, int64_t batch, const float* x,
                        const float* dy, float* dx) {
  std::shared_ptr<const CachedPool> c = Get(kind, g, batch);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_DIFF_DST, Wrap(c->dst, dy)},
                                                {DNNL_ARG_DIFF_SRC, Wrap(c->src, dx)}};
  std::vector<char> workspace;
  std::vector<float> y;
  if (kind == PoolKind::kMax) {
    y.resize(static_cast<size_t>(g.planes * g.out_h * g.out_w));
    Forward(*c, x, y.data(), &workspace);
    args.emplace(DNNL_ARG_WORKSPACE, Wrap(c->forward_pd.workspace_desc(), workspace.data()));
  }
  const auto sp_md = c->backward_pd.scratchpad_desc();
  if (sp_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(sp_md, onednn::Scratchpad(sp_md.get_size())));
  }
  c->backward.execute(onednn::ThreadStream(), args);
  onednn::ThreadStream().wait();
}

}  // namespace ofl
