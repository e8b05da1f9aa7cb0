// Text placed in XML (the SVG pictures of layouts and benchmarks): &, <, > and " as entities.
#pragma once

#include <string>
#include <string_view>

namespace tilevm {

std::string xml_escape(std::string_view text);

}  // namespace tilevm
