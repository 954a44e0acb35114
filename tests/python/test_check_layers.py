"""scripts/check_layers.py: the include check that issue #26 asks CI to run, on small made-up trees."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import check_layers  # noqa: E402

CMAKE = """
kforge_layer(base SOURCES src/base/a.cpp DEPS fmt)
kforge_layer(ir
  SOURCES src/ir/g.cpp
  DEPS kforge_base)
kforge_layer(codegen SOURCES src/codegen/e.cpp DEPS kforge_ir)
kforge_layer(skills SOURCES src/skills/s.cpp DEPS kforge_ir)
add_executable(kforge src/cli/main.cpp)
target_link_libraries(kforge PRIVATE kforge_codegen kforge_skills)
"""


def tree(tmp_path, files):
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    for rel, text in files.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path


def test_declared_graph_is_read_from_cmake():
    deps = check_layers.declared_layers(CMAKE)
    assert deps == {"base": set(), "ir": {"base"}, "codegen": {"ir"}, "skills": {"ir"}, "cli": {"codegen", "skills"}}
    assert check_layers.closure(deps, "codegen") == {"codegen", "ir", "base"}


def test_includes_down_the_layers_pass(tmp_path):
    root = tree(tmp_path, {
        "src/codegen/e.cpp": '#include "codegen/e.h"\n#include "ir/g.h"\n#include "base/a.h"\n#include <vector>\n',
        "src/cli/main.cpp": '#include "skills/s.h"\n#include "codegen/e.h"\n',
    })
    assert check_layers.violations(root) == []


def test_include_across_undeclared_layer_is_named_with_its_line(tmp_path):
    root = tree(tmp_path, {"src/codegen/e.cpp": '// emitter\n#include "ir/g.h"\n#include "skills/s.h"\n'})
    found = check_layers.violations(root)
    assert len(found) == 1
    assert found[0].startswith("src/codegen/e.cpp:3: layer 'codegen' includes 'skills/'")
    assert check_layers.main(["check_layers", str(root)]) == 1


def test_upward_include_fails(tmp_path):
    root = tree(tmp_path, {"src/ir/g.h": '#include "codegen/e.h"\n'})
    assert [v.split(":")[0] for v in check_layers.violations(root)] == ["src/ir/g.h"]


def test_the_repository_itself_is_clean():
    root = Path(__file__).resolve().parents[2]
    assert check_layers.violations(root) == []
