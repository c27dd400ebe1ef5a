"""Cross-checks of deploy/kubernetes against the `kubernetes` provider (imported by
deploy_check.py): the objects its defaults name exist, their pods serve the runtime it speaks,
the console may claim from the pool with exactly the verbs the provider uses and nothing more,
its in-cluster credentials are mounted where kube reads them, and the network lets the console
reach the pods and nothing else reach them or leave them.

The provider's side is read from its source (config.rs for the defaults, health.rs for the
verbs it checks), so the two cannot drift apart unnoticed.
"""

import hashlib
import os
import re

AGENT_SANDBOX_GROUP = "extensions.agents.x-k8s.io"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
READ_ONLY = {"sandboxwarmpools": {"get"}, "sandboxtemplates": {"get"}}
RUNTIME_FILE = "server.py"


def provider_side(root):
    """The provider's defaults (namespace, warm pool, runtime port) and its claim verbs."""
    source = os.path.join(root, "src/sandbox/providers/kubernetes")
    with open(os.path.join(source, "config.rs")) as f:
        config = f.read()
    with open(os.path.join(source, "health.rs")) as f:
        health = f.read()
    defaults = config[config.index("impl Default for KubernetesConfig"):]
    found = {
        "namespace": re.search(r'namespace: "([^"]+)"', defaults).group(1),
        "warm_pool": re.search(r'warm_pool: "([^"]+)"', defaults).group(1),
        "runtime_port": int(re.search(r"runtime_port: (\d+)", defaults).group(1)),
    }
    verbs = re.search(r"CLAIM_VERBS: \[&str; \d+\] = \[([^\]]*)\]", health).group(1)
    found["claim_verbs"] = set(re.findall(r'"(\w+)"', verbs))
    return found


def generated_config_maps(folder, kustomization):
    """The ConfigMaps kustomization.yaml generates, as kustomize would (name, data, options)."""
    made = []
    for generator in kustomization.get("configMapGenerator", []):
        data = {}
        for item in generator.get("files", []):
            key, _, path = item.partition("=") if "=" in item else (os.path.basename(item), "", item)
            with open(os.path.join(folder, path), "rb") as f:
                data[key] = f.read()
        made.append({
            "name": generator.get("name"),
            "namespace": generator.get("namespace"),
            "data": data,
            "hashed": not (generator.get("options") or {}).get("disableNameSuffixHash", False),
        })
    return made


def matches(selector, labels):
    wanted = (selector or {}).get("matchLabels") or {}
    return bool(wanted) and all(labels.get(key) == value for key, value in wanted.items())


def admits(peer, namespace, pod_labels):
    """Whether a NetworkPolicy peer selects the pods with `pod_labels` in `namespace`."""
    return (matches(peer.get("namespaceSelector"), {"kubernetes.io/metadata.name": namespace})
            and matches(peer.get("podSelector"), pod_labels))


def check(docs_by_file, generated, provider, problems):
    docs = [(f"{name}: {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}", doc)
            for name, file_docs in docs_by_file.items() for doc in file_docs]
    by_kind = {}
    for where, doc in docs:
        by_kind.setdefault(doc.get("kind"), []).append((where, doc))
    namespace, port = provider["namespace"], provider["runtime_port"]
    deployments = by_kind.get("Deployment", [])
    if not deployments:
        return
    _, deployment = deployments[0]
    console_ns = deployment["metadata"]["namespace"]
    console_labels = deployment["spec"]["template"]["metadata"].get("labels", {})
    console_pod = deployment["spec"]["template"]["spec"]
    account = console_pod.get("serviceAccountName", "default")

    # The pool and template the provider's defaults name.
    pools = {(d["metadata"].get("namespace"), d["metadata"]["name"]): (w, d) for w, d in by_kind.get("SandboxWarmPool", [])}
    pool = pools.get((namespace, provider["warm_pool"]))
    problems.need(pool, "sandboxes.yaml",
                  f"the provider's default warm pool {provider['warm_pool']!r} in {namespace!r} is not defined")
    if not pool:
        return
    templates = {(d["metadata"].get("namespace"), d["metadata"]["name"]): (w, d) for w, d in by_kind.get("SandboxTemplate", [])}
    where, template = templates.get((namespace, pool[1]["spec"]["sandboxTemplateRef"]["name"]), (None, None))
    if template is None:
        return
    pod_template = template["spec"].get("podTemplate") or {}
    pod_labels = (pod_template.get("metadata") or {}).get("labels") or {}
    pod = pod_template.get("spec") or {}

    # The runtime: served on the provider's port, ready when it answers, from the ConfigMap.
    maps = {(m["namespace"], m["name"]): m for m in generated}
    serving = []
    for container in pod.get("containers", []):
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
        if port not in ports.values():
            continue
        serving.append(container)
        name = f"{where} container {container.get('name')}"
        get = (container.get("readinessProbe") or {}).get("httpGet") or {}
        problems.need(get.get("path") == "/" and ports.get(get.get("port"), get.get("port")) == port, name,
                      f"a readinessProbe must GET / on the runtime port {port} (a pod joins the pool when it answers)")
        env = {item.get("name"): item.get("value") for item in container.get("env", [])}
        problems.need(env.get("SANDBOX_RUNTIME_PORT") == str(port), name, f"SANDBOX_RUNTIME_PORT must be {port}")
        command = " ".join(container.get("command", []) + container.get("args", []))
        mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts", [])}
        volumes = {v.get("name"): v for v in pod.get("volumes", [])}
        runs = [(path, volume) for path, volume in mounts.items() if f"{path}/{RUNTIME_FILE}" in command]
        problems.need(runs, name, f"the command must run {RUNTIME_FILE} from a mounted volume")
        for _, volume in runs:
            config_map = (volumes.get(volume) or {}).get("configMap", {}).get("name")
            made = maps.get((namespace, config_map))
            problems.need(made and RUNTIME_FILE in made["data"], name,
                          f"volume {volume} must be a ConfigMap kustomization.yaml generates with {RUNTIME_FILE}")
            if not made or RUNTIME_FILE not in made["data"]:
                continue
            problems.need(not made["hashed"], "kustomization.yaml",
                          f"{config_map}: disableNameSuffixHash (kustomize does not rename it inside a SandboxTemplate)")
            sha = hashlib.sha256(made["data"][RUNTIME_FILE]).hexdigest()
            annotation = ((pod_template.get("metadata") or {}).get("annotations") or {}).get("sandbox-console.io/runtime-sha256")
            problems.need(annotation == sha, where,
                          f"annotation sandbox-console.io/runtime-sha256 must be {sha} (the runtime changed: roll the pool)")
    problems.need(serving, where, f"a container must serve the runtime on port {port}")
    problems.need(not any("serviceAccountToken" in (source or {})
                          for volume in pod.get("volumes", [])
                          for source in (volume.get("projected") or {}).get("sources", [])),
                  where, "no service account token may be mounted into sandbox pods")

    # The sandboxes' network: in from the console on the runtime port only; out, nothing.
    rules = template["spec"].get("networkPolicy")
    management = template["spec"].get("networkPolicyManagement", "Managed")
    problems.need(management == "Managed" and rules is not None, where,
                  "a Managed networkPolicy of its own (the controller's default admits no console)")
    if rules is not None:
        ingress = rules.get("ingress") or []
        problems.need(all(rule.get("ports") and rule.get("from") for rule in ingress), where,
                      "every ingress rule must name its peers and ports")
        problems.need(any(port in {p.get("port") for p in rule.get("ports", [])}
                          and any(admits(peer, console_ns, console_labels) for peer in rule.get("from", []))
                          for rule in ingress), where,
                      f"the console's pods must be admitted on port {port}")
        problems.need({p.get("port") for rule in ingress for p in rule.get("ports", [])} <= {port}, where,
                      f"only the runtime port {port} may be reached")
        problems.need(rules.get("egress") == [], where, "sandbox pods must have no egress (empty list)")

    # The console's network: out to the runtime port of those pods, and to the API servers.
    for other_where, policy in by_kind.get("NetworkPolicy", []):
        if policy["metadata"].get("namespace") != console_ns:
            continue
        egress = policy["spec"].get("egress", [])
        problems.need(any(port in {p.get("port") for p in rule.get("ports", [])}
                          and any(admits(peer, namespace, pod_labels) for peer in rule.get("to", []))
                          for rule in egress), other_where,
                      f"the console must reach the sandbox pods on port {port}")
        problems.need(any(p.get("port") == 6443 for rule in egress for p in rule.get("ports", [])), other_where,
                      "the console must reach the API servers (6443)")

    # RBAC: exactly the provider's verbs on claims, read on the pool and template, nothing more.
    bound = set()
    for other_where, binding in by_kind.get("RoleBinding", []):
        if any(s.get("kind") == "ServiceAccount" and s.get("name") == account and s.get("namespace") == console_ns
               for s in binding.get("subjects", [])):
            problems.need(binding["metadata"].get("namespace") == namespace and binding["roleRef"].get("kind") == "Role",
                          other_where, f"the console's account may be bound to a Role in {namespace} only")
            bound.add((binding["metadata"].get("namespace"), binding["roleRef"].get("name")))
    problems.need(not by_kind.get("ClusterRoleBinding"), "rbac.yaml", "no ClusterRoleBinding (claims are namespaced)")
    granted = {}
    for other_where, role in by_kind.get("Role", []):
        if (role["metadata"].get("namespace"), role["metadata"]["name"]) not in bound:
            continue
        for rule in role.get("rules", []):
            problems.need(rule.get("apiGroups") == [AGENT_SANDBOX_GROUP] and not rule.get("resourceNames"), other_where,
                          f"rules on {AGENT_SANDBOX_GROUP} only")
            for resource in rule.get("resources", []):
                granted.setdefault(resource, set()).update(rule.get("verbs", []))
    wanted = {"sandboxclaims": provider["claim_verbs"], **READ_ONLY}
    problems.need(granted == wanted, "rbac.yaml",
                  f"the console's Role must grant exactly {sorted((k, sorted(v)) for k, v in wanted.items())}, "
                  f"not {sorted((k, sorted(v)) for k, v in granted.items())}")

    # In-cluster credentials: an expiring token, the CA and the namespace where kube reads them.
    container = console_pod.get("containers", [{}])[0]
    mounted = {m.get("name"): m for m in container.get("volumeMounts", [])}
    tokens = []
    for volume in console_pod.get("volumes", []):
        sources = (volume.get("projected") or {}).get("sources", [])
        token = next((s["serviceAccountToken"] for s in sources if "serviceAccountToken" in s), None)
        if token is None:
            continue
        tokens.append(volume)
        mount = mounted.get(volume["name"]) or {}
        name = f"console.yaml: volume {volume['name']}"
        problems.need(mount.get("mountPath") == TOKEN_PATH and mount.get("readOnly") is True, name,
                      f"mounted read-only at {TOKEN_PATH}")
        problems.need(token.get("path") == "token" and 0 < token.get("expirationSeconds", 3607) <= 3600, name,
                      "a token file `token` that expires within the hour")
        items = {item.get("path") for s in sources for item in
                 ((s.get("configMap") or {}).get("items", []) + (s.get("downwardAPI") or {}).get("items", []))}
        problems.need({"ca.crt", "namespace"} <= items, name, "ca.crt and namespace beside the token")
    problems.need(len(tokens) == 1, "console.yaml", "one projected service account token for the console")


def mutations(find, mutate_k8s):
    """Broken variants for deploy_check.py's self-test, each with the words its complaint holds."""
    def template(docs):
        return find(docs, "SandboxTemplate")["spec"]

    def runtime(docs):
        return template(docs)["podTemplate"]["spec"]["containers"][0]

    def role(docs):
        return find(docs, "Role")

    def console_volumes(docs):
        return find(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]

    return {
        "a warm pool the provider does not name": (mutate_k8s(
            lambda d: find(d, "SandboxWarmPool")["metadata"].__setitem__("name", "other")), "default warm pool"),
        "a runtime on another port": (mutate_k8s(
            lambda d: runtime(d)["ports"][0].__setitem__("containerPort", 8080)), "serve the runtime on port"),
        "a runtime never probed": (mutate_k8s(
            lambda d: runtime(d).pop("readinessProbe")), "readinessProbe must GET /"),
        "a runtime not run from the ConfigMap": (mutate_k8s(
            lambda d: runtime(d).__setitem__("command", ["sleep", "infinity"])), f"must run {RUNTIME_FILE}"),
        "a changed runtime with the old annotation": (mutate_k8s(
            lambda d: template(d)["podTemplate"]["metadata"]["annotations"].__setitem__(
                "sandbox-console.io/runtime-sha256", "0" * 64)), "roll the pool"),
        "a sandbox pod with a token": (mutate_k8s(
            lambda d: template(d)["podTemplate"]["spec"]["volumes"].append(
                {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}})),
            "no service account token may be mounted into sandbox pods"),
        "sandboxes the console cannot reach": (mutate_k8s(
            lambda d: template(d)["networkPolicy"]["ingress"][0]["from"].pop(0)), "console's pods must be admitted"),
        "sandboxes with egress": (mutate_k8s(
            lambda d: template(d)["networkPolicy"].__setitem__("egress", [{"ports": [{"port": 443}]}])),
            "no egress"),
        "a console that cannot reach the runtime": (mutate_k8s(
            lambda d: find(d, "NetworkPolicy")["spec"]["egress"].pop()), "reach the sandbox pods"),
        "a Role that may also patch claims": (mutate_k8s(
            lambda d: role(d)["rules"][0]["verbs"].append("patch")), "grant exactly"),
        "a Role that may read secrets": (mutate_k8s(
            lambda d: role(d)["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})),
            "rules on extensions.agents.x-k8s.io only"),
        "a Role bound to nobody": (mutate_k8s(
            lambda d: find(d, "RoleBinding")["subjects"][0].__setitem__("name", "someone")), "grant exactly"),
        "a token that never expires": (mutate_k8s(
            lambda d: console_volumes(d)[0]["projected"]["sources"][0]["serviceAccountToken"].__setitem__(
                "expirationSeconds", 86400)), "expires within the hour"),
        "a token where kube does not look": (mutate_k8s(
            lambda d: find(d, "Deployment")["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][-1].__setitem__(
                "mountPath", "/token")), f"mounted read-only at {TOKEN_PATH}"),
    }
