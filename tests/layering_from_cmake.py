#!/usr/bin/env python3
"""The layering rule that the build graph itself states, checked on the includes.

Each library under userspace/ is declared in userspace/CMakeLists.txt with
`netqos_layer(<target> <dir>)` and its links with `target_link_libraries`. All of them share the
include root userspace/, so the compiler lets any file include any header. This script reads the
declared graph and holds every file to it: a file of library L may include (in quotes) only

  - headers of L's own directory,
  - headers of a library L links, whatever the link's visibility,
  - headers of what those link PUBLIC (or INTERFACE), transitively: what a dependency's headers
    expose is part of its interface; what it links PRIVATE is not,

where the generated headers belong to their targets: the protobuf libraries of proto/CMakeLists.txt
(`netqos_proto_library(<target> ... PROTOS a/b.proto)` gives "a/b.pb.h" and "a/b.grpc.pb.h",
relative to its ROOT) and the BPF skeletons (`netqos_<name>_skel` gives "netqos_<name>.skel.h" and
the shared "netqos_abi.h"). So adding a link is what allows an include, and the layer table in
docs/architecture.md is whatever the CMake file says. Each violation names the file, the line, the
header's library and what the including library does link.

Usage: tests/layering_from_cmake.py [--root DIR]     check the tree at DIR (default: the repo)
       tests/layering_from_cmake.py --self-test       inject violations into a copy; each must fail
"""
import argparse
import pathlib
import re
import shutil
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ANGLE_INCLUDE = re.compile(r"^\s*#\s*include\s*<([^>]+)>")
# Third-party headers and the targets that carry them (any of the targets will do); system and
# standard headers (<sys/...>, <linux/...>, <vector>) are everyone's.
THIRD_PARTY = [
    ("nlohmann/", {"nlohmann_json::nlohmann_json"}),
    ("spdlog/", {"spdlog::spdlog"}),
    ("netlink/", {"PkgConfig::LIBNL"}),
    ("bpf/", {"PkgConfig::LIBBPF"}),
    ("openssl/", {"OpenSSL::SSL", "OpenSSL::Crypto"}),
    ("CLI/", {"CLI11::CLI11"}),
    ("httplib.h", {"PkgConfig::HTTPLIB"}),
    ("libcgroup.h", {"PkgConfig::LIBCGROUP"}),
    ("grpcpp/", {"gRPC::grpc++"}),
    ("google/protobuf/", {"protobuf::libprotobuf"}),
]
# What the generated protobuf libraries link PUBLIC themselves (cmake/ProtoGrpc.cmake): protobuf,
# and gRPC for those declared GRPC.
PROTO_LINKS = [("protobuf::libprotobuf", "PUBLIC"), ("gRPC::grpc++", "PUBLIC")]


def third_party_owners(header):
    for prefix, targets in THIRD_PARTY:
        if header == prefix or header.startswith(prefix):
            return targets
    return None


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def parse_layers(text):
    """target -> directory, and target -> [(dependency, visibility)]."""
    text = strip_comments(text)
    layers = {}  # target -> (directory, ONLY regex or None, EXCLUDE regex or None)
    for m in re.finditer(r"netqos_layer\(\s*([^\s)]+)\s+([^\s)]+)([^)]*)\)", text):
        options = dict(re.findall(r'(ONLY|EXCLUDE)\s+"([^"]*)"', m.group(3)))
        unescape = lambda r: r.replace("\\\\", "\\") if r is not None else None  # noqa: E731
        layers[m.group(1)] = (m.group(2), unescape(options.get("ONLY")),
                              unescape(options.get("EXCLUDE")))
    links = {}
    for m in re.finditer(r"target_link_libraries\(\s*(\S+)([^)]*)\)", text):
        target, visibility = m.group(1), "PUBLIC"  # the plain signature propagates
        for token in m.group(2).split():
            if token in ("PUBLIC", "PRIVATE", "INTERFACE"):
                visibility = token
            else:
                links.setdefault(target, []).append((token, visibility))
    return layers, links


def parse_protos(text):
    """proto target -> the generated headers it provides; the targets with gRPC stubs."""
    text = strip_comments(text)
    headers, grpc = {}, set()
    for m in re.finditer(r"netqos_proto_library\(\s*(\S+)([^)]*)\)", text):
        target, args = m.group(1), m.group(2).split()
        root = ""
        if "ROOT" in args:
            root = args[args.index("ROOT") + 1].replace("${CMAKE_CURRENT_SOURCE_DIR}", "").strip("/")
        protos = args[args.index("PROTOS") + 1:] if "PROTOS" in args else []
        out = set()
        for p in protos:
            if root and p.startswith(root + "/"):
                p = p[len(root) + 1:]
            stem = p[: -len(".proto")]
            out |= {stem + ".pb.h", stem + ".grpc.pb.h"}
        headers[target] = out
        if "GRPC" in args:
            grpc.add(target)
    return headers, grpc


class Graph:
    def __init__(self, root):
        userspace = (root / "userspace" / "CMakeLists.txt").read_text()
        self.layers, self.links = parse_layers(userspace)
        self.protos, grpc = parse_protos((root / "proto" / "CMakeLists.txt").read_text())
        for target in self.protos:
            links = PROTO_LINKS if target in grpc else PROTO_LINKS[:1]
            self.links.setdefault(target, []).extend(links)
        # Longest directory first, so enforce/kernel/ is not taken for enforce/; within a
        # directory, a library that takes ONLY some files before the one that takes the rest.
        self.dirs = sorted(self.layers.items(), key=lambda kv: (-len(kv[1][0]), kv[1][1] is None))

    def owns(self, target, path):
        """Whether `path` ("dir/file.h", relative to userspace/) belongs to `target`."""
        d, only, exclude = self.layers[target]
        if not path.startswith(d + "/") or "/" in path[len(d) + 1:]:
            return False
        if only is not None and not re.search(only, "/" + path):
            return False
        return exclude is None or not re.search(exclude, "/" + path)

    def owner_of_header(self, header):
        # Generated headers first: "nri/v1alpha1/api.pb.h" is NRI's API, not userspace/nri's.
        for target, headers in self.protos.items():
            if header in headers:
                return target
        for target, _ in self.dirs:
            if self.owns(target, header):
                return target
        m = re.fullmatch(r"(netqos_[a-z_]+)\.skel\.h", header)
        if m:
            return m.group(1) + "_skel"
        if header == "netqos_abi.h":
            return "skeletons"
        return None

    def reachable(self, target):
        """What `target`'s files may include: itself, its links, their PUBLIC links onwards."""
        seen = {target}
        frontier = [dep for dep, _ in self.links.get(target, [])]
        while frontier:
            dep = frontier.pop()
            if dep in seen:
                continue
            seen.add(dep)
            frontier += [d for d, vis in self.links.get(dep, []) if vis in ("PUBLIC", "INTERFACE")]
        return seen

    def problems(self):
        out = []
        for target, deps in self.links.items():
            for dep, _ in deps:
                if dep.startswith("netqos_") and not (
                        dep in self.layers or dep in self.protos or dep.endswith("_skel")):
                    out.append(f"userspace/CMakeLists.txt: {target} links {dep}, which is no "
                               "library this script knows (netqos_layer, netqos_proto_library or "
                               "a skeleton)")
        return out


def includes_of(path):
    """(line number, header, the targets any of which provides it) for each netqos or
    third-party include of `path`; None as targets for a quoted header of no known library."""
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1), "quoted"
            continue
        m = ANGLE_INCLUDE.match(line)
        if m and third_party_owners(m.group(1)):
            yield n, m.group(1), "angle"


def check(root):
    graph = Graph(root)
    failures = graph.problems()
    userspace = root / "userspace"
    for target, (d, _, _) in graph.dirs:
        allowed = graph.reachable(target)
        if any(t.endswith("_skel") for t in allowed):
            allowed.add("skeletons")
        linked = ", ".join(dep for dep, _ in graph.links.get(target, [])) or "nothing"
        header_needs = set()  # what the library's own headers include: its interface
        for path in sorted((userspace / d).glob("*")):
            if path.suffix not in (".h", ".cc") or not graph.owns(target, f"{d}/{path.name}"):
                continue
            for n, header, kind in includes_of(path):
                owners = ({graph.owner_of_header(header)} - {None} if kind == "quoted"
                          else third_party_owners(header))
                where = f"{path.relative_to(root)}:{n}"
                if not owners:
                    failures.append(f'{where}: "{header}" belongs to no library of the build')
                    continue
                if path.suffix == ".h":
                    header_needs |= owners
                    if "skeletons" in owners:
                        header_needs |= {t for t in allowed if t.endswith("_skel")}
                if not owners & allowed:
                    failures.append(f"{where}: includes {header} of {' or '.join(sorted(owners))}, "
                                    f"which {target} does not reach (it links {linked}; what a "
                                    "dependency links PRIVATE does not count)")
        # A PUBLIC link puts the dependency on every user's include path: only for what the
        # library's headers include.
        for dep, vis in graph.links.get(target, []):
            if vis == "PUBLIC" and dep not in header_needs and dep not in ("Threads::Threads",):
                failures.append(f"userspace/CMakeLists.txt: {target} links {dep} PUBLIC, but no "
                                f"header of {d}/ includes it: link it PRIVATE")
    return failures


def self_test():
    """Each injected violation must be reported; the untouched copy must pass."""
    cases = [
        ("the untouched tree", None, None, None),
        ("core/ including app/", "userspace/core/policy.cc", r"\A", '#include "app/daemon.h"\n'),
        ("shaping/ including topology/", "userspace/shaping/htb_plan.cc", r"\A",
         '#include "topology/sysfs_nic.h"\n'),
        ("pods/cri/ including the kubelet API", "userspace/pods/cri/cri_translate.cc", r"\A",
         '#include "resourceplugin/v1alpha1/api.pb.h"\n'),
        ("topology/ losing its link to os/", "userspace/CMakeLists.txt",
         r"(target_link_libraries\(netqos_topology PUBLIC netqos_core) netqos_os", r"\1"),
        ("the proto translation (ONLY files of grpc/) including the service layer",
         "userspace/grpc/translate_request.cc", r"\A", '#include "service/allocation_service.h"\n'),
        ("pods/cri/ including os/", "userspace/pods/cri/cri_runtime.cc", r"\A",
         '#include "os/netns_exec.h"\n'),
        ("enforce/ including a netlink shaping header, which it does not link",
         "userspace/enforce/link_shaper.cc", r"\A", '#include "shaping/netlink/htb_installer.h"\n'),
        ("a PUBLIC link that no header needs", "userspace/CMakeLists.txt",
         r"(netqos_checkpoint PUBLIC netqos_core nlohmann_json::nlohmann_json)\s+PRIVATE",
         r"\1"),
    ]
    ok = True
    for name, rel, pattern, replacement in cases:
        with tempfile.TemporaryDirectory() as tmp:
            copy = pathlib.Path(tmp)
            shutil.copytree(REPO / "userspace", copy / "userspace")
            (copy / "proto").mkdir()
            shutil.copy(REPO / "proto" / "CMakeLists.txt", copy / "proto" / "CMakeLists.txt")
            if rel is not None:
                f = copy / rel
                text, count = re.subn(pattern, replacement, f.read_text(), count=1)
                if count != 1:
                    print(f"self-test: {name}: the injection did not apply to {rel}")
                    ok = False
                    continue
                f.write_text(text)
            failures = check(copy)
        want_fail = rel is not None
        if bool(failures) != want_fail:
            print(f"self-test: {name}: expected {'a violation' if want_fail else 'none'}, got "
                  f"{failures[:3] if failures else 'none'}")
            ok = False
        else:
            print(f"self-test: {name}: {failures[0] if failures else 'passes'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=pathlib.Path, default=REPO)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)
    failures = check(args.root)
    for f in failures:
        print("layering:", f)
    if failures:
        sys.exit(1)
    graph = Graph(args.root)
    print(f"layering: {len(graph.layers)} libraries include only what their links in "
          "userspace/CMakeLists.txt reach")


if __name__ == "__main__":
    main()
