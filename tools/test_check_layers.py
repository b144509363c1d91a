"""The layering check fails on each kind of forbidden edge and passes a clean tree."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).resolve().parent / "check_layers.py"


def run_on(files):
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        r = subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)
        return r.returncode, r.stderr


CLEAN = {
    "src/core/check.h": '#include "roberta/error.h"\n',
    "src/kernels/matmul.cpp": '#include "kernels/matmul.h"\n#include "core/check.h"\n#include <vector>\n',
    "src/model/m.cpp": '#include "kernels/matmul.h"\n#include "io/safetensors.h"\n',
    "src/serve/s.cpp": '#include "model/m.h"\n',
    "cli/main.cpp": '#include "serve/s.h"\n#include "train/t.h"\n',
    "include/roberta/error.h": "#pragma once\n",
}


class CheckLayers(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, err = run_on(CLEAN)
        self.assertEqual(rc, 0, err)

    def test_kernels_including_model_fails(self):
        rc, err = run_on({**CLEAN, "src/kernels/bad.cpp": '#include "model/roberta_model.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/kernels/bad.cpp:1: kernels includes model", err)

    def test_serve_including_train_fails(self):
        rc, err = run_on({**CLEAN, "src/serve/bad.h": '// x\n  #  include "train/trainer.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/serve/bad.h:2: serve includes train", err)

    def test_anything_including_cli_fails(self):
        rc, err = run_on({**CLEAN, "src/train/bad.cpp": '#include "cli/commands.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("train includes cli", err)

    def test_public_header_including_src_fails(self):
        rc, err = run_on({**CLEAN, "include/roberta/classifier.h": '#include "model/m.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("roberta includes model", err)

    def test_lower_layer_including_an_upper_public_header_fails(self):
        rc, err = run_on({**CLEAN, "include/roberta/trainer.h": "#pragma once\n",
                          "src/kernels/bad.cpp": '#include "roberta/trainer.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/kernels/bad.cpp:1: kernels includes train's public header", err)

    def test_public_header_of_its_own_layer_or_below_passes(self):
        rc, err = run_on({**CLEAN, "include/roberta/trainer.h": '#include "roberta/classifier.h"\n',
                          "include/roberta/classifier.h": '#include "roberta/error.h"\n',
                          "src/train/t.cpp": '#include "roberta/trainer.h"\n#include "roberta/error.h"\n'})
        self.assertEqual(rc, 0, err)

    def test_public_header_including_an_upper_one_fails(self):
        rc, err = run_on({**CLEAN, "include/roberta/classifier.h": '#include "roberta/trainer.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("model includes train's public header", err)

    def test_public_header_no_layer_owns_fails(self):
        rc, err = run_on({**CLEAN, "include/roberta/widget.h": "#pragma once\n"})
        self.assertEqual(rc, 1)
        self.assertIn("no layer owns this public header", err)

    def test_parent_folder_include_fails(self):
        rc, err = run_on({**CLEAN, "src/kernels/bad.cpp": '#include "../model/m.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/kernels/bad.cpp:1: kernels includes a parent folder", err)

    def test_unknown_layer_fails(self):
        rc, err = run_on({**CLEAN, "src/newthing/x.cpp": '#include "core/check.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/newthing is not a known layer", err)

    def test_beast_or_asio_outside_the_transport_fails(self):
        for path, line in [("src/serve/routes.h", "#include <boost/beast/http.hpp>\n"),
                           ("src/serve/tei_routes.cpp", '  #  include "boost/asio.hpp"\n'),
                           ("src/serve/http_checks.cpp", "#include <boost/asio/ip/address.hpp>\n"),
                           ("cli/cmd_serve.cpp", "#include <boost/beast/core.hpp>\n")]:
            rc, err = run_on({**CLEAN, path: "// x\n" + line})
            self.assertEqual(rc, 1, path)
            self.assertIn(f"{path}:2: includes <boost/", err)

    def test_beast_and_asio_in_the_transport_pass(self):
        rc, err = run_on({**CLEAN, "src/serve/http_session.cpp": "#include <boost/beast/http.hpp>\n",
                          "src/serve/http_server.cpp": "#include <boost/asio.hpp>\n",
                          "src/serve/http_server_impl.h": "#include <boost/beast/ssl.hpp>\n#include <boost/asio/ssl.hpp>\n",
                          "src/serve/other.cpp": "#include <boost/system/error_code.hpp>\n"})
        self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    unittest.main()


class AgainstBuild(unittest.TestCase):
    def run_against(self, text):
        with tempfile.TemporaryDirectory() as d:
            f = pathlib.Path(d) / "vis.txt"
            f.write_text(text)
            r = subprocess.run([sys.executable, str(CHECK), "--against-build", str(f)], capture_output=True, text=True)
            return r.returncode, r.stderr

    TABLE = {  # what the build gives each layer today (tests/layering/CMakeLists.txt writes it)
        "core": "", "tensor": "core", "device": "core", "kernels": "core device tensor", "io": "core tensor",
        "tokenizer": "core", "net": "core", "hub": "core io net tensor",
        "model": "core device io kernels tensor tokenizer", "dist": "core device",
        "train": "core device dist io kernels model tensor tokenizer",
        "serve": "core device io kernels model tensor tokenizer"}

    PUBLIC = {"error.h": "core", "log.h": "core", "version.h": "core", "runtime.h": "device",
              "tokenizer.h": "tokenizer", "classifier.h": "model", "fill_mask.h": "model", "trainer.h": "train",
              "pretrain.h": "train", "benchmark.h": "train"}

    def text(self, public=None, **override):
        t = {**self.TABLE, **override}
        p = {**self.PUBLIC, **(public or {})}
        return "".join(f"{k}: {v}\n" for k, v in t.items()) + "".join(f"roberta/{k}: {v}\n" for k, v in p.items())

    def test_build_giving_a_public_header_to_another_layer_fails(self):
        rc, err = self.run_against(self.text(public={"trainer.h": "model"}))
        self.assertEqual(rc, 1)
        self.assertIn("include/roberta/trainer.h: the build gives it to model, the table to train", err)

    def test_matching_build_passes(self):
        rc, err = self.run_against(self.text())
        self.assertEqual(rc, 0, err)

    def test_build_letting_serve_see_train_fails(self):
        rc, err = self.run_against(self.text(serve="core device io kernels model tensor tokenizer train"))
        self.assertEqual(rc, 1)
        self.assertIn("serve: the build lets it include", err)
        self.assertIn("build only: train", err)

    def test_unknown_build_layer_fails(self):
        rc, err = self.run_against(self.text() + "widgets: core\n")
        self.assertEqual(rc, 1)
        self.assertIn("'widgets'", err)
