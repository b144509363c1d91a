// exec_ctx_for (exec_ctx.h): the one place a --device flag becomes a kernel context.
#include "kernels/exec_ctx.h"

#include "device/device_choice.h"

namespace rc::kernels {

ExecCtx exec_ctx_for(const std::string& device) {
  ExecCtx ctx;
  const DeviceChoice d = resolve_device_choice(device);
  if (d.cuda) {
    ctx.device = Device::cuda;
    ctx.device_index = d.index;
    select_device(ctx.device, ctx.device_index);
  }
  return ctx;
}

}  // namespace rc::kernels
