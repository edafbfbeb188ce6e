module github.com/kubeletkit/kubeletkit/examples

go 1.26.8

require github.com/kubeletkit/kubeletkit v0.0.0

replace github.com/kubeletkit/kubeletkit => ../
