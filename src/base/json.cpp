// JSON parsing with user-facing error messages.
#include "base/json.h"

namespace kforge {

StatusOr<Json> parse_json(const std::string& text, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to get the position for the message.
    try {
      Json again = Json::parse(text);
      (void)again;
    } catch (const Json::exception& e) {  // parse_error, and out_of_range for numbers too large
      return invalid_argument(what + " is not valid JSON (" + std::string(e.what()) + ")");
    }
    return invalid_argument(what + " is not valid JSON");
  }
  return j;
}

}  // namespace kforge
