module example.com/typed-hooks

go 1.26.0

require (
	github.com/inrun/inrun v0.0.0-00010101000000-000000000000
	k8s.io/api v0.37.2
	k8s.io/apimachinery v0.37.2
)
