# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``k3s_runtime``: read what k3s/RKE2 generated and what this collection wrote
for them, decide here (``module_utils/kube_distro.py``), write the drop-in and template back."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import kube_distro as kd
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError, normalize_runtimes
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.engine import BackupSet, EngineAction, EnginePlan, FileStep
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles, missing_dirs, parent_dirs


class ActionModule(EngineAction):
    argument_spec = staticmethod(argument_specs.k3s_runtime)
    refusals = (kd.KubeError, ConfigError, toml_edit.TomlEditError)

    def refusal_message(self, exc, args):
        return "%s; nothing was written" % exc

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        files = NodeFiles(self, task_vars, args["read_ahead"])
        present = args["state"] == "present"
        _read, existing, heads = files.read_many(host_root, [], exist=kd.marks(),
                                                 texts=[kd.paths(d)["config"] for d in kd.DISTRIBUTIONS])
        found = kd.detect(existing, dict(zip([kd.paths(d)["config"] for d in kd.DISTRIBUTIONS], heads)))
        if args["distribution"] != "auto" and (found is None or found["distribution"] != args["distribution"]):
            found = kd.detect([kd.paths(args["distribution"])["config"]], {})
        if found is None:
            raise kd.KubeError("neither k3s nor RKE2 is on this node (looked for %s and their systemd units); set "
                               "distribution to k3s or rke2 to provision one anyway"
                               % " and ".join(kd.paths(d)["config"] for d in kd.DISTRIBUTIONS))
        owned = found["templates"] + [found["drop_in"]]
        parents = [d for p in owned for d in parent_dirs(p)]
        read, existing_dirs, config_texts = files.read_many(host_root, owned, exist=parents, texts=[found["config_path"]])
        by_path = {f.host_path: f for f in read}
        config_text = config_texts[0]
        config_data = toml_edit.load(config_text, found["config_path"]) if config_text is not None else None
        params = {"state": args["state"], "install_dir": args["install_dir"], "set_as_default": args["set_as_default"],
                  "explicit": bool(args["runtimes"]), "runtimes": normalize_runtimes(args["runtimes"], args["install_dir"])}
        created = {p: missing_dirs(p, existing_dirs) for p in owned}
        decided = kd.plan(found, params, config_data,
                          {p: by_path[p].text if by_path[p].exists else None for p in found["templates"]},
                          by_path[found["drop_in"]].text if by_path[found["drop_in"]].exists else None, created)
        steps, remove_dirs, backups = [], [], []
        for path in owned:
            node_file = by_path[path]
            current = node_file.text if node_file.exists else None
            text = decided["writes"].get(path, current)
            hand_changed = current is not None and text != current and ownership.changed_since_written(current)
            steps.append(FileStep(node_file, text, mode="0644", copy_on_remove=True,
                                  keep_copy_because="changed by hand since this module wrote it" if hand_changed else None))
            if text is None and current is not None:
                remove_dirs.append((path, ownership.dirs_in_text(current)))
            backups.append(BackupSet(node_file, ownership.backup_pattern(path), self._judge, gone=text is None))
        problems, notes = kd.generated_problems(decided["expected"], config_data)
        result = {"path": found["config_path"], "distribution": found["distribution"], "service": found["service"],
                  "socket": found["socket"], "config_version": decided["version"], "template": decided["template"],
                  "drop_in": found["drop_in"], "extra_runtimes": decided["extra_runtimes"],
                  "expected": decided["expected"], "generated_problems": problems, "generated_notes": notes}
        plan = EnginePlan(steps, remove_dirs, decided["changes"], decided["warnings"], restart_required=True,
                          result=result, backups=backups)
        out = self.carry_out(files, host_root, plan, backup=args["backup"],
                             remove_backups=args["remove_backups"] and not present)
        # The config is regenerated at the next start: until then it says nothing of this run's files.
        out["generated_ok"] = not problems and not out["changed"]
        return out

    @staticmethod
    def _judge(texts):
        ours = [c for c, t in texts.items() if kd.is_ours(t) and not ownership.changed_since_written(t)]
        return ours, [d for c in ours for d in ownership.dirs_in_text(texts[c])]
