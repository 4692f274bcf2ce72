#!/bin/sh
# A recording kubectl for the bootstrap script tests, installed as `kubectl` by
# tests/bootstrap/edge.py. POSIX sh (builtins only on the common paths) because the scripts
# under test call kubectl a dozen times a run; `apply` is handed to fake_kubectl_apply.py,
# installed next to it as kubectl-apply.
#
# State under $FAKE_KUBE_DIR:
#   objects/KIND/NAMESPACE/NAME   one file per object ("_" for cluster-scoped); a CRD's file
#                                 holds its served versions, a Secret's its stringData
#   calls/N                       call N: the working directory, then one argument a line
#   calls/N.files                 the -f file of call N, if local (written by apply)
#   count, context                the last call number; kubectl's current context
#   unreachable                   if present, every call but `config` fails
#   fail-wait/TYPE/NAME           if present, waiting for TYPE/NAME times out
#   urls                          "URL<TAB>local file" lines: what `apply -f URL` downloads
# Answers what the bootstrap script asks the way kubectl would (output, NotFound on stderr,
# exit 1); anything else exits 99, so an unexpected call fails the test.

S=${FAKE_KUBE_DIR:?}
read -r n <"$S/count"
n=$((n + 1))
echo "$n" >"$S/count"
printf '%s\n' "$PWD" "$@" >"$S/calls/$n"

unsupported() {
    echo "fake kubectl: unsupported call: $*" >&2
    exit 99
}

# Flags anywhere; the remaining words become the positional parameters.
ns=default file='' out='' cond='' timeout='' apply_flags='' words=''
while [ $# -gt 0 ]; do
    case $1 in
        -n | -f | -o) [ $# -ge 2 ] || unsupported "$@" ;;
    esac
    case $1 in
        -n) ns=$2; shift ;;
        -f) file=$2; shift ;;
        -o) out=$2; shift ;;
        --for=condition=*) cond=${1#--for=condition=} ;;
        --timeout=*) timeout=${1#--timeout=} ;;
        --server-side | --force-conflicts | --field-manager=*) apply_flags=yes ;;
        -*) unsupported "$1" ;;
        *) words="$words $1" ;;
    esac
    shift
done
set -f
# shellcheck disable=SC2086 # split into words on purpose (kubectl words have no blanks)
set -- $words

if [ "$*" = "config current-context" ] && [ -z "$out$file$cond$timeout$apply_flags" ]; then
    read -r context <"$S/context"
    echo "$context"
    exit 0
fi
if [ -e "$S/unreachable" ]; then
    echo "The connection to the server 127.0.0.1:6443 was refused -" \
        "did you specify the right host or port?" >&2
    exit 1
fi

# Sets kind and path for resource TYPE NAME in namespace $ns.
locate() {
    scope=$ns
    case $1 in
        node | nodes) kind=Node scope=_ ;;
        namespace | ns) kind=Namespace scope=_ ;;
        crd | customresourcedefinition) kind=CustomResourceDefinition scope=_ ;;
        secret) kind=Secret ;;
        deployment) kind=Deployment ;;
        kustomization) kind=Kustomization ;;
        gitrepository) kind=GitRepository ;;
        *) unsupported "resource type $1" ;;
    esac
    path=$S/objects/$kind/$scope/$2
    if [ ! -e "$path" ]; then
        echo "Error from server (NotFound): $1 \"$2\" not found" >&2
        exit 1
    fi
}

[ "$1" = apply ] || [ -z "$apply_flags$file" ] || unsupported "$@"
case $1 in
    get)
        if [ "$*" = "get nodes" ] && [ -z "$out" ]; then
            echo "NAME          STATUS   ROLES           AGE   VERSION"
            echo "edge-node-1   Ready    control-plane   42d   v1.33.1"
            exit 0
        fi
        [ $# -eq 3 ] && [ -z "$cond$timeout" ] || unsupported "$@"
        locate "$2" "$3"
        case $kind:$out in
            *:) printf 'NAME\n%s\n' "$3" ;;
            'CustomResourceDefinition:jsonpath={.spec.versions[?(@.served==true)].name}')
                read -r served <"$path"
                printf '%s' "$served" ;;
            *) unsupported "-o $out" ;;
        esac
        ;;
    wait)
        [ $# -ge 2 ] && [ -n "$cond" ] && [ -n "$timeout" ] && [ -z "$out" ] || unsupported "$@"
        shift
        for target; do
            locate "${target%%/*}" "${target#*/}"
            case $kind:$cond in
                CustomResourceDefinition:Established | Deployment:Available) ;;
                Kustomization:Ready | GitRepository:Ready) ;;
                *) unsupported "condition $cond on $kind" ;;
            esac
            if [ -e "$S/fail-wait/$target" ]; then
                echo "error: timed out waiting for the condition on $target" >&2
                exit 1
            fi
            echo "$target condition met"
        done
        ;;
    create)
        [ $# -eq 3 ] && [ "$2" = namespace ] && [ -z "$out$cond$timeout" ] || unsupported "$@"
        if [ -e "$S/objects/Namespace/_/$3" ]; then
            echo "Error from server (AlreadyExists): namespaces \"$3\" already exists" >&2
            exit 1
        fi
        : >"$S/objects/Namespace/_/$3"
        echo "namespace/$3 created"
        ;;
    apply)
        [ $# -eq 1 ] && [ -n "$file" ] && [ -z "$out$cond$timeout" ] || unsupported "$@"
        exec "${0%/*}/kubectl-apply" "$n" "$ns" "$file"
        ;;
    *) unsupported "$@" ;;
esac
