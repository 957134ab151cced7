// The board's files (node/tsnode/board/: HTML, CSS, JavaScript), compiled
// into tsnode by embed_board.cmake, served by the HTTP port at / and
// /board.* (http_board.cc). Nothing is fetched from anywhere else.
#pragma once

#include <string_view>
#include <vector>

namespace ts::tsnode {

struct BoardAsset {
  std::string_view path;          // "/index.html", "/board.js", ...
  std::string_view content_type;
  std::string_view body;
};

// Every file, in the order CMake lists them.
const std::vector<BoardAsset>& BoardAssets();

}  // namespace ts::tsnode
