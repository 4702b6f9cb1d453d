package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, the context and, by its presence, marks a
// kubeconfig as one a Cluster wrote and may overwrite.
const contextName = "inrun-local"

// WriteKubeconfig writes a kubeconfig that reaches the API server as cfg
// does to path, readable by its owner only: it may hold a client key. Tools
// outside the process, such as kubectl or an operator binary, read it.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	const user = "inrun-admin"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: user}
	kc.CurrentContext = contextName
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Write then rename, so that a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kubeconfig-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkKubeconfigTarget refuses a path that holds anything but a kubeconfig
// a Cluster wrote, so that a slip such as ~/.kube/config never destroys a
// person's own configuration.
func checkKubeconfigTarget(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil || kc.CurrentContext != contextName || len(kc.Contexts) != 1 {
		return fmt.Errorf("refusing to overwrite %s: it is not a kubeconfig written by an inrun local cluster; choose another path or remove the file", path)
	}
	return nil
}
