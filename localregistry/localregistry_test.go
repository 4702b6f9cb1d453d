package localregistry_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
)

func TestMissingBinary(t *testing.T) {
	_, err := localregistry.Start(context.Background(), localregistry.Options{AssetsDir: t.TempDir()})
	if !assets.IsMissing(err) || !strings.Contains(err.Error(), "registry does not exist") || !strings.Contains(err.Error(), assets.BuildCommand) {
		t.Errorf("Start without the binary = %v, want it missing and how to build it", err)
	}
}

func TestStartStop(t *testing.T) {
	r, err := localregistry.Start(context.Background(), localregistry.Options{})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + r.Host + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Distribution-Api-Version") != "registry/2.0" {
		t.Errorf("GET /v2/ = %d %v, want the Distribution registry's 200", resp.StatusCode, resp.Header)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + r.Host + "/v2/"); err == nil {
		t.Error("the registry still answers after Stop")
	}
}

// TestAddress: a registry listens on the address asked for while it is
// free, and on another port when it is taken.
func TestAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	first, err := localregistry.Start(context.Background(), localregistry.Options{Address: addr})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	if first.Host != addr {
		t.Errorf("Host = %s, want the free address asked for, %s", first.Host, addr)
	}
	second, err := localregistry.Start(context.Background(), localregistry.Options{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	if second.Host == addr {
		t.Errorf("a second registry got the taken address %s", addr)
	}
}
