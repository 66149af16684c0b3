#include "ops/grad.h"

namespace ofl {

Maybe<std::string> GradContext::Emit1(const std::string& op_type,
                                      const std::vector<std::string>& inputs,
                                      const AttrMap& attrs) {
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs, Emit(op_type, inputs, attrs));
  CHECK_EQ(outs.size(), 1u) << op_type << " has " << outs.size() << " outputs, Emit1 wants 1";
  return outs[0];
}

}  // namespace ofl
